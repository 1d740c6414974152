/**
 * One runner process of bench/cron.ts's `runner-1p` and `runner-2p` scenarios, forked with an
 * IPC channel and ORRERY_DATABASE and ORRERY_SCHEMA in its environment:
 *   fork('bench/cron-runner-child.ts', [runnerId], { execArgv: ['--import', 'tsx', '--conditions=source'] })
 * It starts a DefaultRunner with the bench's one-task workflow (cron on, recovery off, as
 * runner-1x) and sends `{ ready: true }`; after each tick's hand-offs it sends `{ fired, atMs }`
 * (its cron:fired count so far, and when), so that the bench learns when the last one fired
 * without querying the database it measures; on `'stop'` it shuts down and exits.
 */
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';

const [runnerId] = process.argv.slice(2);
const workflow = defineWorkflow({ name: 'bench', tasks: [{ id: 'noop', run: () => {} }] });
const runner = await DefaultRunner.create({
  database: process.env.ORRERY_DATABASE,
  schema: process.env.ORRERY_SCHEMA,
  workflows: [workflow],
  runnerId,
  cronEnableRecovery: false,
});
let fired = 0;
let reporting = false;
runner.on('cron:fired', () => {
  fired += 1;
  if (reporting) return;
  // One message per burst: a tick reports its hand-offs synchronously, one event each.
  reporting = true;
  setImmediate(() => {
    reporting = false;
    process.send!({ fired, atMs: Date.now() });
  });
});
process.on('message', (message) => {
  if (message !== 'stop') return;
  void runner.shutdown({ timeoutMs: 10_000 }).finally(() => process.disconnect());
});
await runner.start();
process.send!({ ready: true });
