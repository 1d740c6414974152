import { type ConcurrencyGroupInfo, FIRE_LAG_SOURCES } from '@orreryjs/core';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RunnerEvents } from './events.js';

/** Fire lag and task durations span milliseconds to minutes. */
const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/**
 * The runner's Prometheus metrics, fed with every event the runner emits (before its
 * listeners, so `removeAllListeners()` cannot starve them). Each runner has a registry of its
 * own (not prom-client's global one), so two runners in one process never collide; merge it
 * into yours with `Registry.merge` if you serve one endpoint.
 *
 * Schedule labels use the schedule's name (its id when it has none), for the first
 * {@link SCHEDULE_LABEL_LIMIT} schedules this runner reports on (see there); tasks are labelled by
 * workflow and task id. Both are bounded by what users define, never by traffic.
 */
/**
 * Distinct schedules the per-schedule metrics name; any further schedule counts under
 * `schedule="_other"` ({@link OTHER_SCHEDULES}). Prometheus clients keep every label set they
 * ever reported: at a million schedules that would be a million series per counter, and
 * seventeen per schedule for the fire-lag histogram, held in each runner's memory and sent on
 * every scrape. The same bound as OpenTelemetry's metrics SDK (2,000 attribute sets per
 * metric, the rest under an overflow set). Per-schedule facts at any scale are in the ledger
 * (`getCronExecutionHistory`, the dashboard).
 */
export const SCHEDULE_LABEL_LIMIT = 2_000;
/** The `schedule` label of the schedules past {@link SCHEDULE_LABEL_LIMIT}. */
export const OTHER_SCHEDULES = '_other';

/** The `schedule` label of an event: its name (id without one) while under the limit, then {@link OTHER_SCHEDULES}. */
function scheduleLabels(limit: number): (event: { scheduleId: string; scheduleName: string | null }) => string {
  const named = new Set<string>();
  return (event) => {
    const schedule = event.scheduleName ?? event.scheduleId;
    if (named.has(schedule)) return schedule;
    if (named.size >= limit) return OTHER_SCHEDULES;
    named.add(schedule);
    return schedule;
  };
}

/** Database counts the load gauges read at each scrape. */
export interface MetricsSources {
  countWork(): Promise<{ readyTasks: number; runningPipelines: number }>;
  countLost(): Promise<number>;
  countAbandoned(): Promise<number>;
  /** Enabled schedules due past the lost threshold whose workflow no live runner has, counting at most `limit`. */
  countStranded(limit: number): Promise<number>;
  /** Every concurrency group with unfinished pipelines: its active and queued counts. */
  concurrencyGroups(): Promise<ConcurrencyGroupInfo[]>;
}

/** The most stranded schedules the gauge counts per scrape (each is a row read): past it, it reads this value. */
const STRANDED_GAUGE_LIMIT = 1_000;

export class RunnerMetrics {
  readonly registry = new Registry();

  readonly #record: { [K in keyof RunnerEvents]?: (payload: RunnerEvents[K][0]) => void };

  constructor(activeTasks: () => number, sources?: MetricsSources) {
    const registers = [this.registry];
    const fired = new Counter({
      name: 'orrery_cron_fired_total',
      help: 'Cron occurrences handed off to a pipeline, by schedule and source (schedule, manual, backfill, recovery)',
      labelNames: ['schedule', 'source'] as const,
      registers,
    });
    const lag = new Histogram({
      name: 'orrery_cron_fire_lag_seconds',
      help: 'handedOffAt - scheduledTime of scheduled and catch-up occurrences (jitter included; backfills and manual triggers have no lag), by schedule',
      labelNames: ['schedule'] as const,
      buckets: SECONDS_BUCKETS,
      registers,
    });
    const missed = new Counter({
      name: 'orrery_cron_missed_total',
      help: 'Cron slots recorded as missed (each missed ledger row counts its missedCount slots), by schedule',
      labelNames: ['schedule'] as const,
      registers,
    });
    const buffered = new Counter({
      name: 'orrery_cron_buffered_total',
      help: 'Occurrences buffered behind an active one (overlapPolicy buffer_one or buffer_all), by schedule',
      labelNames: ['schedule'] as const,
      registers,
    });
    const paused = new Counter({
      name: 'orrery_cron_paused_total',
      help: 'Schedules that disabled themselves, by reason: failure (pauseOnFailure) or max_runs',
      labelNames: ['reason'] as const,
      registers,
    });
    const skipped = new Counter({
      name: 'orrery_cron_skipped_total',
      help: 'Occurrences skipped by overlapPolicy skip',
      labelNames: ['schedule'] as const,
      registers,
    });
    const recovery = new Counter({
      name: 'orrery_cron_recovery_total',
      help: 'Recovery outcomes of lost occurrences: lost (picked up), recovered (handed off), abandoned',
      labelNames: ['outcome'] as const,
      registers,
    });
    const taskOutcomes = new Counter({
      name: 'orrery_task_outcomes_total',
      help: 'Task attempts by outcome: completed, failed (will_retry says whether another attempt follows), skipped',
      labelNames: ['workflow', 'task', 'outcome', 'will_retry'] as const,
      registers,
    });
    const taskDuration = new Histogram({
      name: 'orrery_task_duration_seconds',
      help: 'Duration of successful task attempts',
      labelNames: ['workflow', 'task'] as const,
      buckets: SECONDS_BUCKETS,
      registers,
    });
    const pipelines = new Counter({
      name: 'orrery_pipelines_finished_total',
      help: 'Pipelines this runner saw finish, by workflow and status',
      labelNames: ['workflow', 'status'] as const,
      registers,
    });
    new Gauge({
      name: 'orrery_tasks_running',
      help: 'Task attempts running in this process now',
      registers,
      collect() {
        this.set(activeTasks());
      },
    });

    if (sources !== undefined) registerDatabaseGauges(registers, sources);

    const scheduleOf = scheduleLabels(SCHEDULE_LABEL_LIMIT);
    const finished = (e: { workflowName: string; status: string }) =>
      pipelines.inc({ workflow: e.workflowName, status: e.status });
    this.#record = {
      'cron:fired': (e) => {
        const schedule = scheduleOf(e);
        fired.inc({ schedule, source: e.source });
        if (FIRE_LAG_SOURCES.includes(e.source)) lag.observe({ schedule }, Math.max(0, e.lagMs) / 1000);
      },
      'cron:missed': (e) => missed.inc({ schedule: scheduleOf(e) }, e.missedCount),
      'cron:buffered': (e) => buffered.inc({ schedule: scheduleOf(e) }),
      'cron:paused': (e) => paused.inc({ reason: e.reason }),
      'cron:skipped': (e) => skipped.inc({ schedule: scheduleOf(e) }),
      'cron:lost': () => recovery.inc({ outcome: 'lost' }),
      'cron:recovered': () => recovery.inc({ outcome: 'recovered' }),
      'cron:abandoned': () => recovery.inc({ outcome: 'abandoned' }),
      'task:completed': (e) => {
        taskOutcomes.inc({ workflow: e.workflowName, task: e.taskId, outcome: 'completed', will_retry: 'false' });
        taskDuration.observe({ workflow: e.workflowName, task: e.taskId }, e.durationMs / 1000);
      },
      'task:failed': (e) =>
        taskOutcomes.inc({
          workflow: e.workflowName,
          task: e.taskId,
          outcome: 'failed',
          will_retry: String(e.willRetry),
        }),
      'task:skipped': (e) =>
        taskOutcomes.inc({ workflow: e.workflowName, task: e.taskId, outcome: 'skipped', will_retry: 'false' }),
      'pipeline:completed': finished,
      'pipeline:failed': finished,
      'pipeline:cancelled': (e) => finished({ workflowName: e.workflowName, status: 'cancelled' }),
    };
  }

  /** Counts one event; the runner calls it for every event it emits. */
  record<K extends keyof RunnerEvents>(event: K, payload: RunnerEvents[K][0]): void {
    (this.#record[event] as ((payload: RunnerEvents[K][0]) => void) | undefined)?.(payload);
  }
}

/**
 * Gauges read from the database at each scrape (so they hold for every runner of the
 * database, not this one alone): ready tasks, running pipelines, pipelines queued for a
 * concurrency group and active in one, lost and abandoned occurrences, stranded schedules. A failed read (the database is down or closed) leaves the last value.
 */
function registerDatabaseGauges(registers: Registry[], sources: MetricsSources): void {
  const gauge = (name: string, help: string, read: () => Promise<number>) =>
    new Gauge({
      name,
      help,
      registers,
      async collect() {
        try {
          this.set(await read());
        } catch {
          // Keep the last value: a scrape must not fail because one count could not be read.
        }
      },
    });
  gauge(
    'orrery_tasks_ready',
    'Tasks ready to run now, of any runner (backlog)',
    async () => (await sources.countWork()).readyTasks,
  );
  gauge(
    'orrery_pipelines_running',
    'Pipelines running now, of any runner',
    async () => (await sources.countWork()).runningPipelines,
  );
  const labelled = <L extends string>(
    name: string,
    help: string,
    label: L,
    read: () => Promise<ReadonlyMap<string, number>>,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: [label],
      registers,
      async collect() {
        try {
          const values = await read();
          this.reset();
          for (const [value, count] of values) this.set({ [label]: value } as Record<L, string>, count);
        } catch {
          // Keep the last values, as the other database gauges do.
        }
      },
    });
  labelled(
    'orrery_pipelines_waiting',
    'Pending pipelines held back, by reason (concurrency: queued for a full concurrency group)',
    'reason',
    async () => {
      const groups = await sources.concurrencyGroups();
      return new Map([['concurrency', groups.reduce((sum, group) => sum + group.queued, 0)]]);
    },
  );
  labelled(
    'orrery_concurrency_active',
    'Pipelines active in concurrency groups, by workflow, of any runner',
    'workflow',
    async () => {
      const active = new Map<string, number>();
      for (const group of await sources.concurrencyGroups()) {
        active.set(group.workflowName, (active.get(group.workflowName) ?? 0) + group.active);
      }
      return active;
    },
  );
  gauge(
    'orrery_cron_lost_occurrences',
    'Ledger rows still claimed past cronLostThresholdMs (waiting for recovery)',
    sources.countLost,
  );
  gauge(
    'orrery_cron_abandoned_occurrences',
    'Ledger rows recovery gave up on (abandoned), as retention keeps them',
    sources.countAbandoned,
  );
  gauge(
    'orrery_schedules_stranded',
    `Enabled schedules due past cronLostThresholdMs whose workflow no live runner has registered (a fleet condition; at most ${STRANDED_GAUGE_LIMIT} counted)`,
    () => sources.countStranded(STRANDED_GAUGE_LIMIT),
  );
}
