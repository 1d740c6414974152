/** A runner's row in `runners`: who is alive and what it can run. */
export interface RunnerRow {
  id: string;
  hostname: string;
  pid: number;
  workflows: string[];
  startedAt: Date;
  heartbeatAt: Date;
  stoppedAt: Date | null;
}

/** Storage port for runner liveness. */
export interface RunnerStore {
  /** Inserts or refreshes the runner's row. */
  heartbeat(runner: Omit<RunnerRow, 'stoppedAt'>): Promise<void>;
  /** Records a graceful stop. */
  markStopped(id: string, now: Date): Promise<void>;
  listRunners(): Promise<RunnerRow[]>;
  /**
   * Deletes up to `batchSize` runner rows whose last heartbeat is before `before`: runners
   * stopped or dead that long ago (a live runner heartbeats). Keeps the table from growing by a
   * row per process start forever.
   */
  deleteSilentRunners(before: Date, batchSize: number): Promise<number>;
  /** The database server's clock, to measure this host's offset from it. */
  databaseNow(): Promise<Date>;
}
