import type {
  ClaimDueRequest,
  ClaimLostRequest,
  CronExecutionRow,
  CronStore,
  LostOccurrence,
  ManualOccurrenceRequest,
  ManualOccurrenceResult,
  NewCronExecution,
  OccurrenceStats,
  RecoveryCounts,
  RecoveryOutcome,
  ReleaseBufferedRequest,
  ScheduleFilter,
  ScheduleRow,
  ScheduleSyncWrites,
  TickProbe,
  TickProbeRequest,
} from '@orreryjs/core';
import { type PostgresHandle, statement, transaction } from '../transaction.js';
import { insertOccurrences } from './backfill.js';
import { releaseBuffered } from './buffer.js';
import { claimDueSchedules, WALK_DUE_INDEX_IN_ORDER } from './claim.js';
import { prepareHandoff } from './handoff.js';
import { occurrenceStats, prepareLedger } from './ledger.js';
import { prepareProbe } from './probe.js';
import { claimLostOccurrences, finishRecovery, prepareRecover } from './recover.js';
import {
  applyScheduleSync,
  deleteSchedule,
  insertSchedule,
  listSchedules,
  prepareSchedules,
  ScheduleSyncLost,
  selectStrandedSchedules,
  updateSchedule,
} from './schedules.js';
import { insertManualOccurrence } from './trigger.js';

/** Every prepared statement of the cron store, by the file of the guarantee it serves. */
export function prepareCronStore(handle: PostgresHandle) {
  return {
    schedules: prepareSchedules(handle),
    probe: prepareProbe(handle),
    handoff: prepareHandoff(handle),
    recover: prepareRecover(handle),
    ledger: prepareLedger(handle),
  };
}

/** {@link CronStore} on Postgres: each method is one transaction, most of them one statement. */
export class PostgresCronStore implements CronStore {
  readonly #handle: PostgresHandle;
  readonly #q: ReturnType<typeof prepareCronStore>;

  /** Builds every statement for `handle`; the schema must be migrated. */
  constructor(handle: PostgresHandle) {
    this.#handle = handle;
    this.#q = prepareCronStore(handle);
  }

  insertSchedule(schedule: ScheduleRow): Promise<{ schedule: ScheduleRow; created: boolean }> {
    return statement('insertSchedule', () => insertSchedule(this.#q.schedules, schedule));
  }

  getSchedule(id: string): Promise<ScheduleRow | null> {
    return statement('getSchedule', async () => (await this.#q.schedules.selectSchedule.execute({ id }))[0] ?? null);
  }

  getScheduleByName(name: string): Promise<ScheduleRow | null> {
    return statement(
      'getScheduleByName',
      async () => (await this.#q.schedules.selectScheduleByName.execute({ name }))[0] ?? null,
    );
  }

  listSchedules(filter: ScheduleFilter): Promise<ScheduleRow[]> {
    return statement('listSchedules', () => listSchedules(this.#handle.db, this.#handle.tables, filter));
  }

  updateSchedule(
    id: string,
    expectedVersion: number,
    patch: Partial<Omit<ScheduleRow, 'id' | 'version' | 'createdAt'>>,
  ): Promise<ScheduleRow | null> {
    return statement('updateSchedule', () =>
      updateSchedule(this.#handle.db, this.#handle.tables, id, expectedVersion, patch),
    );
  }

  deleteSchedule(id: string): Promise<boolean> {
    return statement('deleteSchedule', () => deleteSchedule(this.#q.schedules, id));
  }

  async applyScheduleSync(writes: ScheduleSyncWrites): Promise<boolean> {
    try {
      await transaction(this.#handle, 'applyScheduleSync', (tx) => applyScheduleSync(tx, this.#handle.tables, writes));
      return true;
    } catch (error) {
      if ((error as { cause?: unknown }).cause instanceof ScheduleSyncLost) return false;
      throw error;
    }
  }

  async probeTick(request: TickProbeRequest): Promise<TickProbe> {
    if (request.workflowNames.length === 0) return { earliestRunAt: null, anyBuffered: false };
    const [probe] = await statement('probeTick', () =>
      this.#q.probe.selectTickProbe.execute({ until: request.until, workflows: [...request.workflowNames] }),
    );
    return { earliestRunAt: probe?.earliestRunAt ?? null, anyBuffered: probe?.anyBuffered === true };
  }

  claimDueSchedules(request: ClaimDueRequest): Promise<CronExecutionRow[]> {
    if (request.workflowNames.length === 0 || request.limit <= 0) return Promise.resolve([]);
    return transaction(
      this.#handle,
      'claimDueSchedules',
      (tx) => claimDueSchedules(tx, this.#handle.tables, this.#q.handoff.insertPipelines, request),
      WALK_DUE_INDEX_IN_ORDER,
    );
  }

  releaseBuffered(request: ReleaseBufferedRequest): Promise<CronExecutionRow[]> {
    if (request.workflowNames.length === 0 || request.limit <= 0) return Promise.resolve([]);
    return transaction(this.#handle, 'releaseBuffered', (tx) => releaseBuffered(tx, this.#handle.tables, request));
  }

  insertOccurrences(rows: readonly NewCronExecution[]): Promise<{ claimed: CronExecutionRow[]; existing: number }> {
    if (rows.length === 0) return Promise.resolve({ claimed: [], existing: 0 });
    return transaction(this.#handle, 'insertOccurrences', (tx) => insertOccurrences(tx, this.#handle.tables, rows));
  }

  insertManualOccurrence(request: ManualOccurrenceRequest): Promise<ManualOccurrenceResult | null> {
    return transaction(this.#handle, 'insertManualOccurrence', (tx) =>
      insertManualOccurrence(tx, this.#handle.tables, request),
    );
  }

  linkOccurrence(id: string, pipelineExecutionId: string, now: Date): Promise<boolean> {
    return statement(
      'linkOccurrence',
      async () =>
        ((await this.#q.handoff.linkOccurrence.execute({ id, pipelineId: pipelineExecutionId, now })).rowCount ?? 0) >
        0,
    );
  }

  claimLostOccurrences(request: ClaimLostRequest): Promise<LostOccurrence[]> {
    if (request.workflowNames.length === 0 || request.limit <= 0) return Promise.resolve([]);
    return statement('claimLostOccurrences', () => claimLostOccurrences(this.#q.recover, request));
  }

  finishRecovery(id: string, runnerId: string, outcome: RecoveryOutcome, now: Date): Promise<boolean> {
    return statement('finishRecovery', () => finishRecovery(this.#q.recover, id, runnerId, outcome, now));
  }

  getOccurrence(id: string): Promise<CronExecutionRow | null> {
    return statement('getOccurrence', async () => (await this.#q.ledger.selectOccurrence.execute({ id }))[0] ?? null);
  }

  listOccurrences(scheduleId: string, limit: number, offset: number): Promise<CronExecutionRow[]> {
    return statement('listOccurrences', () =>
      this.#q.ledger.selectOccurrencesOfSchedule.execute({ scheduleId, limit, offset }),
    );
  }

  occurrenceStats(since: Date, lostBefore: Date): Promise<OccurrenceStats> {
    return statement('occurrenceStats', () => occurrenceStats(this.#q.ledger, since, lostBefore));
  }

  recoveryCounts(): Promise<RecoveryCounts> {
    return statement('recoveryCounts', async () => (await this.#q.ledger.selectRecoveryCounts.execute())[0]!);
  }

  countLostOccurrences(lostBefore: Date): Promise<number> {
    return statement(
      'countLostOccurrences',
      async () => (await this.#q.ledger.countLostOccurrences.execute({ lostBefore }))[0]?.count ?? 0,
    );
  }

  countAbandonedOccurrences(): Promise<number> {
    return statement(
      'countAbandonedOccurrences',
      async () => (await this.#q.ledger.countAbandonedOccurrences.execute())[0]?.count ?? 0,
    );
  }

  listStrandedSchedules(dueBefore: Date, runnable: readonly string[], limit: number): Promise<ScheduleRow[]> {
    return statement('listStrandedSchedules', () =>
      selectStrandedSchedules(this.#handle.db, this.#handle.tables, dueBefore, runnable, limit),
    );
  }

  findOccurrencePipeline(occurrenceId: string): Promise<string | null> {
    return statement(
      'findOccurrencePipeline',
      async () => (await this.#q.recover.selectOccurrencePipeline.execute({ key: occurrenceId }))[0]?.id ?? null,
    );
  }

  deleteTerminalOccurrences(before: Date, batchSize: number): Promise<number> {
    return statement(
      'deleteTerminalOccurrences',
      async () => (await this.#q.ledger.deleteTerminalOccurrences.execute({ before, batchSize })).rowCount ?? 0,
    );
  }
}
