import type { Clock, CronStore, ExecutionStore, FailingLoop } from '@orreryjs/core';
import type { CronHealth } from '@orreryjs/cron';

/**
 * How this process is: `ok`; `degraded` (it works, late: one of its loops is backing off after
 * failed ticks); `unhealthy` (not started, shut down, or its database cannot be read). Only
 * `unhealthy` should fail a readiness probe.
 */
export type HealthStatus = 'ok' | 'degraded' | 'unhealthy';

/**
 * What {@link DefaultRunner.health} reports: this process's state, judged on this process
 * alone, and the fleet conditions the database shows, which are listed but never change
 * `status` (one stale schedule must not take every runner out of its load balancer).
 */
export interface RunnerHealth {
  /** This process only; lost occurrences, stalled tasks and stranded schedules never change it. */
  status: HealthStatus;
  /**
   * Why `status` is not `ok` (`not started`, `shut down`, `database unreachable: …`,
   * `task-claim loop failing (3 ticks in a row)`); empty when ok.
   */
  reasons: string[];
  runnerId: string;
  /** The task claim loop runs in this process. */
  taskLoopRunning: boolean;
  /** The cron tick runs in this process (false with `enableCronScheduling: false`). */
  schedulerRunning: boolean;
  /** The cron recovery loop runs in this process (false with `cronEnableRecovery: false`). */
  recoveryRunning: boolean;
  /** When this process's cron tick last ran; null before the first. */
  lastTickAt: Date | null;
  /** When this process's recovery pass last ran; null before the first. */
  lastRecoveryAt: Date | null;
  /** Task attempts running in this process now. */
  runningTasks: number;
  /**
   * Fleet condition: ledger rows, of any runner, still `claimed` `cronLostThresholdMs` after
   * their fire time. 0 when the database was not read (shut down, or unreachable).
   */
  lostOccurrences: number;
  /** Fleet condition: running tasks, of any runner, whose lease has expired and that nobody has taken over yet; 0 when the database was not read. */
  stalledTasks: number;
  /**
   * Fleet condition: enabled schedules due for longer than `cronLostThresholdMs` whose workflow
   * no live runner has registered: nothing will fire them until such a runner starts (at most
   * 100, earliest due first; the `orrery_schedules_stranded` gauge counts them). Empty when the
   * database was not read.
   */
  strandedSchedules: { id: string; name: string | null; workflowName: string; nextRunAt: Date }[];
  /** When this report was made (runner clock). */
  checkedAt: Date;
}

/** What a health check reads. */
export interface HealthSources {
  runnerId: string;
  /** Started and not shut down. */
  running: boolean;
  /** Shut down: the database is closed, so nothing is read from it. */
  closed: boolean;
  taskLoopRunning: boolean;
  runningTasks: number;
  cron: CronHealth;
  /** This process's loops whose last tick failed. */
  failingLoops: FailingLoop[];
  cronStore: CronStore;
  executionStore: ExecutionStore;
  lostThresholdMs: number;
  clock: Clock;
  /** The workflows live runners have registered. */
  liveWorkflows(): Promise<string[]>;
}

/** How many stranded schedules a health report lists. */
const STRANDED_LIMIT = 100;

/** What finding stranded schedules reads. */
export type StrandedSources = Pick<HealthSources, 'cronStore' | 'liveWorkflows'>;

/** Enabled schedules due before `dueBefore` whose workflow no live runner has, at most `limit`. */
export async function listStranded(
  sources: StrandedSources,
  dueBefore: Date,
  limit: number,
): Promise<RunnerHealth['strandedSchedules']> {
  const runnable = await sources.liveWorkflows();
  const rows = await sources.cronStore.listStrandedSchedules(dueBefore, runnable, limit);
  return rows.map((row) => ({ id: row.id, name: row.name, workflowName: row.workflowName, nextRunAt: row.nextRunAt! }));
}

/**
 * Judges this process (started, not shut down, its database readable) and reads the fleet
 * conditions (lost occurrences, stalled tasks, stranded schedules), which it lists but never
 * lets change the status. A database that cannot be read makes it `unhealthy`, not a throw.
 */
export async function checkHealth(sources: HealthSources): Promise<RunnerHealth> {
  const now = sources.clock.now();
  const dueBefore = new Date(now.getTime() - sources.lostThresholdMs);
  const reasons: string[] = [];
  if (!sources.running) reasons.push(sources.closed ? 'shut down' : 'not started');
  let fleet = { lostOccurrences: 0, stalledTasks: 0, strandedSchedules: [] as RunnerHealth['strandedSchedules'] };
  if (!sources.closed) {
    try {
      const [lostOccurrences, stalledTasks, strandedSchedules] = await Promise.all([
        sources.cronStore.countLostOccurrences(dueBefore),
        sources.executionStore.countStalledTasks(now),
        listStranded(sources, dueBefore, STRANDED_LIMIT),
      ]);
      fleet = { lostOccurrences, stalledTasks, strandedSchedules };
    } catch (error) {
      reasons.push(`database unreachable: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const unhealthy = reasons.length > 0;
  for (const { loop, failures } of sources.failingLoops) {
    reasons.push(`${loop} loop failing (${failures} tick${failures === 1 ? '' : 's'} in a row)`);
  }
  return {
    status: unhealthy ? 'unhealthy' : reasons.length > 0 ? 'degraded' : 'ok',
    reasons,
    runnerId: sources.runnerId,
    taskLoopRunning: sources.taskLoopRunning,
    ...sources.cron,
    runningTasks: sources.runningTasks,
    ...fleet,
    checkedAt: now,
  };
}
