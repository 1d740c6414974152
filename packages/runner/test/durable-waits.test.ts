import { defineWorkflow, ExecutionNotFoundError, ManualClock, ValidationError } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { ADAPTERS, gate, runnersPerTest, waitFor } from './support.js';

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
    // Given back until sendAt: its row is ready from then, its claim undone.
    const storage = await runners.db.storage();
    try {
      await waitFor(async () => {
        const [task] = await storage.executions.listTasks(execution.id);
        return task?.status === 'ready' && task.availableAt.getTime() === sendAt.getTime();
      });
      expect((await storage.executions.listTasks(execution.id))[0]).toMatchObject({ attempt: 0, startedAt: null });
    } finally {
      await storage.close();
    }
    expect(runs).toEqual([]);
    clock.set(sendAt);
    const result = await execution.wait();
    expect(result.status).toBe('completed');
    expect(runs).toEqual([1]);
  });

  describe('signals', () => {
    const approval = (events: string[], release?: Promise<void>) =>
      defineWorkflow({
        name: 'approval',
        tasks: [
          {
            id: 'request',
            run: async () => {
              events.push('request');
              await release;
            },
          },
          { id: 'approved', dependsOn: ['request'], waitFor: { signal: 'approved', timeoutMs: 60_000 } },
          {
            id: 'ship',
            dependsOn: ['approved'],
            run: (ctx) => void events.push(`ship:${JSON.stringify(ctx.get('approved'))}`),
          },
          {
            id: 'escalate',
            dependsOn: ['approved'],
            trigger: 'one_failed',
            run: () => void events.push('escalate'),
          },
        ],
      });

    it('waits without a slot, completes with the payload, and ignores a second signal', async () => {
      const events: string[] = [];
      const other = defineWorkflow({ name: 'other', tasks: [{ id: 't', run: () => void events.push('other') }] });
      const runner = await runners.open({ workflows: [approval(events), other], maxConcurrentTasks: 1 });
      await runner.start();
      const execution = await runner.executeAsync('approval');
      await waitFor(async () => {
        const result = await runner.getExecutionResult(execution.id);
        return (
          result.tasks.find((task) => task.taskId === 'approved')?.status === 'ready' && events.includes('request')
        );
      });
      // The one slot is free while the wait task waits.
      expect((await (await runner.executeAsync('other')).wait()).status).toBe('completed');
      await runner.signal(execution.id, 'approved', { by: 'ada' });
      await runner.signal(execution.id, 'approved', { by: 'bob' });
      const result = await execution.wait();
      expect(result.status).toBe('completed');
      expect(result.finalContext.approved).toEqual({ by: 'ada' });
      expect(events).toEqual(['request', 'other', 'ship:{"by":"ada"}']);
      expect(result.tasks.find((task) => task.taskId === 'escalate')?.status).toBe('skipped');
    });

    it('keeps a signal sent before the wait task is ready', async () => {
      const events: string[] = [];
      const release = gate();
      const runner = await runners.open({ workflows: [approval(events, release.promise)] });
      await runner.start();
      const execution = await runner.executeAsync('approval');
      await waitFor(() => events.includes('request'));
      await runner.signal(execution.id, 'approved');
      release.open();
      const result = await execution.wait();
      expect(result.status).toBe('completed');
      expect(result.finalContext.approved).toBeNull();
    });

    it('fails the wait with SignalTimeoutError after its timeout, and takes the one_failed branch', async () => {
      const events: string[] = [];
      const runner = await runners.open({ workflows: [approval(events)] });
      await runner.start();
      const execution = await runner.executeAsync('approval');
      // Waiting: given back with its deadline set (an attempt in flight would see the clock jump).
      const storage = await runners.db.storage();
      try {
        await waitFor(async () => {
          const task = (await storage.executions.listTasks(execution.id)).find((t) => t.taskId === 'approved');
          return task?.status === 'ready' && task.waitsUntil != null;
        });
      } finally {
        await storage.close();
      }
      // The result shows the deadline while the task waits (what the CLI and the dashboard print).
      const during = await runner.getExecutionResult(execution.id);
      expect(during.tasks.find((task) => task.taskId === 'approved')?.waitsUntil).toEqual(
        new Date(clock.now().getTime() + 60_000),
      );
      clock.advance(60_000);
      const result = await execution.wait();
      expect(result.status).toBe('failed');
      const waited = result.tasks.find((task) => task.taskId === 'approved')!;
      expect(waited).toMatchObject({ status: 'failed', attempts: 1 });
      expect(waited.waitsUntil).toBeUndefined();
      expect(waited.error).toMatch(/^SignalTimeoutError: Task "approved" waited 60000 ms for the signal "approved"/);
      expect(events).toEqual(['request', 'escalate']);
    });

    it('refuses a signal to an unknown or ended execution, and a bad name or payload, writing nothing', async () => {
      const events: string[] = [];
      const runner = await runners.open({ workflows: [approval(events)] });
      await expect(runner.signal(crypto.randomUUID(), 'approved')).rejects.toBeInstanceOf(ExecutionNotFoundError);
      const execution = await runner.executeAsync('approval');
      await runner.cancelExecution(execution.id);
      await expect(runner.signal(execution.id, 'approved')).rejects.toThrow(
        /has ended \(cancelled\); a signal reaches only an execution that has not/,
      );
      await expect(runner.signal(execution.id, '')).rejects.toBeInstanceOf(ValidationError);
      await expect(runner.signal(execution.id, 'x', { f: () => 1 } as never)).rejects.toBeInstanceOf(ValidationError);
    });
  });
});
