import { defineWorkflow, ManualClock } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { ADAPTERS, runnersPerTest, waitFor } from './support.js';

/**
 * Durable delays through real runners, on both adapters: a delayed task waits as a row whose
 * availableAt lies ahead, holding no slot, and starts once the (manual) clock has passed it.
 */
describe.each(ADAPTERS)('delayed tasks, on $name', (adapter) => {
  const clock = new ManualClock(new Date('2030-01-01T00:00:00Z'));
  const runners = runnersPerTest(adapter, () => ({ pollIntervalMs: 10, enableCronScheduling: false, clock }), {
    shutdownTimeoutMs: 1_000,
  });

  it('holds no slot while a task sleeps: another pipeline runs on the one slot meanwhile', async () => {
    const events: string[] = [];
    const HOUR = 3_600_000;
    const chain = defineWorkflow({
      name: 'chain',
      tasks: [
        { id: 'first', run: () => void events.push('first') },
        { id: 'later', dependsOn: ['first'], delayMs: HOUR, run: () => void events.push('later') },
      ],
    });
    const other = defineWorkflow({ name: 'other', tasks: [{ id: 't', run: () => void events.push('other') }] });
    const runner = await runners.open({ workflows: [chain, other], maxConcurrentTasks: 1 });
    await runner.start();
    const started = clock.now();
    const sleeper = await runner.executeAsync('chain');
    await waitFor(() => events.includes('first'));
    const meanwhile = await runner.executeAsync('other');
    expect((await meanwhile.wait()).status).toBe('completed');
    const during = await runner.getExecutionResult(sleeper.id);
    expect(during.status).toBe('running');
    expect(during.tasks.find((task) => task.taskId === 'later')?.status).toBe('ready');
    expect(events).toEqual(['first', 'other']);
    clock.set(new Date(started.getTime() + HOUR));
    const result = await sleeper.wait();
    expect(result.status).toBe('completed');
    expect(events).toEqual(['first', 'other', 'later']);
    // Its only attempt started once the hour had passed on the runner's clock.
    const later = result.tasks.find((task) => task.taskId === 'later')!;
    expect(later.attempts).toBe(1);
    expect(later.startedAt!.getTime()).toBeGreaterThanOrEqual(started.getTime() + HOUR);
  });

  it('does not start a delayed task while its pipeline is paused, even once the delay has passed', async () => {
    const events: string[] = [];
    const wf = defineWorkflow({
      name: 'nap',
      tasks: [{ id: 'nap', delayMs: 60_000, run: () => void events.push('nap') }],
    });
    const runner = await runners.open({ workflows: [wf] });
    await runner.start();
    const execution = await runner.executeAsync('nap');
    await runner.pauseExecution(execution.id);
    clock.advance(120_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(events).toEqual([]);
    await runner.resumeExecution(execution.id);
    expect((await execution.wait()).status).toBe('completed');
    expect(events).toEqual(['nap']);
  });

  it('starts a task no earlier than its notBefore, giving it back meanwhile without using an attempt', async () => {
    const runs: number[] = [];
    const reminder = defineWorkflow({
      name: 'reminder',
      tasks: [
        {
          id: 'remind',
          notBefore: (ctx) => new Date(String(ctx.get('sendAt'))),
          run: (_ctx, info) => void runs.push(info.attempt),
        },
      ],
    });
    const runner = await runners.open({ workflows: [reminder] });
    await runner.start();
    const sendAt = new Date(clock.now().getTime() + 60_000);
    const execution = await runner.executeAsync('reminder', { sendAt: sendAt.toISOString() });
    await waitFor(async () => {
      const [task] = (await runner.getExecutionResult(execution.id)).tasks;
      return task?.status === 'ready' && task.attempts === 0;
    });
    expect(runs).toEqual([]);
    clock.set(sendAt);
    const result = await execution.wait();
    expect(result.status).toBe('completed');
    expect(runs).toEqual([1]);
  });
});
