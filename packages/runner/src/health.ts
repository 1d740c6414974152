import type { Clock, CronStore, ExecutionStore } from '@orreryjs/core';
import type { CronHealth } from '@orreryjs/cron';

/** What {@link DefaultRunner.health} reports: this process's loops, and what the database says is stuck. */
export interface RunnerHealth {
  /**
   * `ok`: started and nothing is lost or stalled. `degraded`: started, but some occurrence
   * is lost, some task stalled (recovery and lease expiry should clear them; if they
   * persist, a runner with those workflows is missing), or some schedule is stranded. `stopped`: not started or shut down.
   */
  status: 'ok' | 'degraded' | 'stopped';
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
   * Ledger rows, of any runner, still `claimed` `cronLostThresholdMs` after their fire time.
   * 0 once this runner has shut down: its database connection is closed.
   */
  lostOccurrences: number;
  /** Running tasks, of any runner, whose lease has expired and that nobody has taken over yet; 0 once shut down. */
  stalledTasks: number;
  /**
   * Enabled schedules due for longer than `cronLostThresholdMs` whose workflow no live runner
   * has registered: nothing will fire them until such a runner starts (at most 100, earliest
   * due first). Empty once shut down.
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
  cronStore: CronStore;
  executionStore: ExecutionStore;
  lostThresholdMs: number;
  clock: Clock;
  /** The workflows live runners have registered. */
  liveWorkflows(): Promise<string[]>;
}

/** How many stranded schedules a health report lists. */
const STRANDED_LIMIT = 100;

/** Reads the database's lost and stalled counts and combines them with this process's loop state. */
export async function checkHealth(sources: HealthSources): Promise<RunnerHealth> {
  const now = sources.clock.now();
  const dueBefore = new Date(now.getTime() - sources.lostThresholdMs);
  const [lostOccurrences, stalledTasks, stranded] = sources.closed
    ? [0, 0, []]
    : await Promise.all([
        sources.cronStore.countLostOccurrences(dueBefore),
        sources.executionStore.countStalledTasks(now),
        sources
          .liveWorkflows()
          .then((runnable) => sources.cronStore.listStrandedSchedules(dueBefore, runnable, STRANDED_LIMIT)),
      ]);
  const strandedSchedules = stranded.map((row) => ({
    id: row.id,
    name: row.name,
    workflowName: row.workflowName,
    nextRunAt: row.nextRunAt!,
  }));
  const stuck = lostOccurrences > 0 || stalledTasks > 0 || strandedSchedules.length > 0;
  return {
    status: !sources.running ? 'stopped' : stuck ? 'degraded' : 'ok',
    runnerId: sources.runnerId,
    taskLoopRunning: sources.taskLoopRunning,
    ...sources.cron,
    runningTasks: sources.runningTasks,
    lostOccurrences,
    stalledTasks,
    strandedSchedules,
    checkedAt: now,
  };
}
