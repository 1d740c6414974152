/**
 * What the demo's parent and its worker processes share: the ETL workflow, its schedule and
 * the runner settings (short leases and recovery thresholds, so that a killed worker's work
 * is picked up within seconds rather than the production defaults' minutes).
 */
import type { CronScheduleInput } from '@orreryjs/runner';
import { type DefaultRunnerConfig, defineWorkflow } from '@orreryjs/runner';

export const WORKFLOW_NAME = 'etl';
export const SCHEDULE_NAME = 'etl-every-2s';
/** Six fields, seconds first: every even second. */
export const CRON_EXPRESSION = '*/2 * * * * *';

/** Runner settings of every demo process. */
export const DEMO_SETTINGS = {
  taskLeaseMs: 1_000,
  pollIntervalMs: 100,
  cronPollIntervalMs: 200,
  cronLostThresholdMs: 2_000,
  cronRecoveryIntervalMs: 1_000,
} satisfies DefaultRunnerConfig;

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

const retry = { maxAttempts: 4, backoff: 'fixed', initialDelayMs: 300, jitter: false } as const;

/** A diamond: extract → transform-a / transform-b → load. transform-b fails on its first attempt. */
export const etl = defineWorkflow({
  name: WORKFLOW_NAME,
  description: 'Extract some rows, transform them two ways in parallel, load the result.',
  tasks: [
    {
      id: 'extract',
      retry,
      run: async (ctx, info) => {
        await sleep(150, info.signal);
        const second = info.scheduledTime?.getUTCSeconds() ?? 0;
        ctx.set('rows', [second, second + 1, second + 2, second + 3]);
      },
    },
    {
      id: 'transform-a',
      dependsOn: ['extract'],
      retry,
      run: async (ctx, info) => {
        await sleep(500, info.signal);
        const rows = ctx.get<number[]>('rows') ?? [];
        ctx.set(
          'sum',
          rows.reduce((a, b) => a + b, 0),
        );
      },
    },
    {
      id: 'transform-b',
      dependsOn: ['extract'],
      retry,
      run: async (ctx, info) => {
        if (info.attempt === 1) throw new Error('upstream connection reset (simulated)');
        await sleep(200, info.signal);
        ctx.set('max', Math.max(...(ctx.get<number[]>('rows') ?? [0])));
      },
    },
    {
      id: 'load',
      dependsOn: ['transform-a', 'transform-b'],
      retry,
      run: async (ctx, info) => {
        await sleep(200, info.signal);
        ctx.set('loaded', { sum: ctx.get('sum') ?? null, max: ctx.get('max') ?? null });
      },
    },
  ],
});

/** The schedule; every process adds it at start-up, which is safe: the same definition returns the existing one. */
export function etlSchedule(startAt: Date): CronScheduleInput {
  return {
    name: SCHEDULE_NAME,
    workflowName: WORKFLOW_NAME,
    cronExpression: CRON_EXPRESSION,
    context: { source: 'orders.csv' },
    startAt,
  };
}
