/**
 * The two processes of bench/runner.ts's cross-process scenario:
 *   node --import tsx --conditions=source bench/cross-process-child.ts worker <listen>
 *   node --import tsx --conditions=source bench/cross-process-child.ts client <listen> <count>
 * with ORRERY_DATABASE and ORRERY_SCHEMA in the environment. The worker runs `stamp` (one task
 * that records when it started) and prints `{"ready": true}`. The client starts `count` stamp
 * pipelines one at a time with random 0–50 ms gaps, waits for each, and prints
 * `{"startToTaskMs": [...], "startToDoneMs": [...]}`. Both read wall time as
 * performance.timeOrigin + performance.now(), comparable across processes on one host.
 */
import { DefaultRunner, defineWorkflow, OrreryClient } from '@orreryjs/runner';

const [role, listenArg, countArg] = process.argv.slice(2);
const config = { database: process.env.ORRERY_DATABASE, schema: process.env.ORRERY_SCHEMA, listen: listenArg === 'on' };
const wallMs = () => performance.timeOrigin + performance.now();

if (role === 'worker') {
  const stamp = defineWorkflow({
    name: 'stamp',
    tasks: [{ id: 'stamp', run: (ctx) => void ctx.set('taskStartedAt', wallMs()) }],
  });
  const runner = await DefaultRunner.create({ ...config, workflows: [stamp], enableCronScheduling: false });
  process.on('SIGTERM', () => void runner.shutdown().finally(() => process.exit(0)));
  await runner.start();
  console.log(JSON.stringify({ ready: true }));
} else {
  const client = await OrreryClient.create(config);
  const startToTaskMs: number[] = [];
  const startToDoneMs: number[] = [];
  try {
    for (let i = 0; i < Number(countArg); i += 1) {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 50));
      const startMs = wallMs();
      const result = await (await client.executeAsync('stamp', { i })).wait({ timeoutMs: 30_000 });
      if (result.status !== 'completed') throw new Error(`pipeline ${result.executionId} ${result.status}`);
      startToDoneMs.push(wallMs() - startMs);
      startToTaskMs.push((result.finalContext.taskStartedAt as number) - startMs);
    }
  } finally {
    await client.close();
  }
  console.log(JSON.stringify({ startToTaskMs, startToDoneMs }));
}
