/**
 * One runner process of bench/cron.ts's `runner-1p` and `runner-2p` scenarios, forked with an
 * IPC channel and ORRERY_DATABASE and ORRERY_SCHEMA in its environment:
 *   fork('bench/cron-runner-child.ts', [runnerId], { execArgv: ['--import', 'tsx', '--conditions=source'] })
 * It starts a DefaultRunner with the bench's one-task workflow (cron on, recovery off, as
 * runner-1x) and sends `{ ready: true }`; on `'stop'` it shuts down, sends `{ fired }` (its
 * cron:fired count) and exits.
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
runner.on('cron:fired', () => {
  fired += 1;
});
process.on('message', (message) => {
  if (message !== 'stop') return;
  void runner
    .shutdown({ timeoutMs: 10_000 })
    .then(() => process.send!({ fired }))
    .finally(() => process.disconnect());
});
await runner.start();
process.send!({ ready: true });
