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
import { encodeTextList } from '../codec.js';
import { prepareAdmission } from '../execution-store/admission.js';
import { prepareControl } from '../execution-store/control.js';
import { preparePipelines } from '../execution-store/pipelines.js';
import { readTransaction, type SqliteHandle, writeTransaction } from '../transaction.js';
import { insertOccurrences, prepareBackfill } from './backfill.js';
import { prepareBuffer, releaseBuffered } from './buffer.js';
import { claimDueSchedules, prepareClaim } from './claim.js';
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
import { insertManualOccurrence, prepareTrigger } from './trigger.js';

/** Every prepared statement of the cron store, by the file of the guarantee it serves. */
export function prepareCronStore(handle: SqliteHandle) {
  return {
    schedules: prepareSchedules(handle),
    probe: prepareProbe(handle),
    claim: prepareClaim(handle),
    buffer: prepareBuffer(handle),
    handoff: prepareHandoff(handle),
    backfill: prepareBackfill(handle),
    recover: prepareRecover(handle),
    ledger: prepareLedger(handle),
    trigger: prepareTrigger(handle),
    // The in-transaction handoff creates pipelines inside the claim transaction.
    pipelines: preparePipelines(handle),
    // cancel_other cancels the pipelines it replaces inside the claim transaction.
    control: prepareControl(handle),
    // Pipelines of concurrency groups are queued with their hand-off.
    admission: prepareAdmission(handle),
  };
}

/** {@link CronStore} on SQLite: each method is one synchronous `BEGIN IMMEDIATE` transaction. */
export class SqliteCronStore implements CronStore {
  readonly #handle: SqliteHandle;
  readonly #q: ReturnType<typeof prepareCronStore>;

  /** Prepares every statement on `handle`; the schema must be migrated. */
  constructor(handle: SqliteHandle) {
    this.#handle = handle;
    this.#q = prepareCronStore(handle);
  }

  insertSchedule(schedule: ScheduleRow): Promise<{ schedule: ScheduleRow; created: boolean }> {
    return writeTransaction(this.#handle, 'insertSchedule', () => insertSchedule(this.#q.schedules, schedule));
  }

  getSchedule(id: string): Promise<ScheduleRow | null> {
    return readTransaction(this.#handle, 'getSchedule', () => this.#q.schedules.selectSchedule.get({ id }) ?? null);
  }

  getScheduleByName(name: string): Promise<ScheduleRow | null> {
    return readTransaction(
      this.#handle,
      'getScheduleByName',
      () => this.#q.schedules.selectScheduleByName.get({ name }) ?? null,
    );
  }

  listSchedules(filter: ScheduleFilter): Promise<ScheduleRow[]> {
    return readTransaction(this.#handle, 'listSchedules', () =>
      listSchedules(this.#handle.client, this.#handle.db, this.#handle.tables, filter),
    );
  }

  updateSchedule(
    id: string,
    expectedVersion: number,
    patch: Partial<Omit<ScheduleRow, 'id' | 'version' | 'createdAt'>>,
  ): Promise<ScheduleRow | null> {
    return writeTransaction(this.#handle, 'updateSchedule', () =>
      updateSchedule(this.#handle.db, this.#handle.tables, id, expectedVersion, patch),
    );
  }

  deleteSchedule(id: string): Promise<boolean> {
    return writeTransaction(this.#handle, 'deleteSchedule', () => deleteSchedule(this.#q, id));
  }

  async applyScheduleSync(writes: ScheduleSyncWrites): Promise<boolean> {
    try {
      await writeTransaction(this.#handle, 'applyScheduleSync', () =>
        applyScheduleSync(this.#handle.db, this.#handle.tables, this.#q, writes),
      );
      return true;
    } catch (error) {
      if ((error as { cause?: unknown }).cause instanceof ScheduleSyncLost) return false;
      throw error;
    }
  }

  probeTick(request: TickProbeRequest): Promise<TickProbe> {
    if (request.workflowNames.length === 0) return Promise.resolve({ earliestRunAt: null, anyBuffered: false });
    return readTransaction(this.#handle, 'probeTick', () => {
      const probe = this.#q.probe.selectTickProbe.get({
        until: request.until,
        workflows: encodeTextList(request.workflowNames),
      });
      return { earliestRunAt: probe?.earliestRunAt ?? null, anyBuffered: probe?.anyBuffered === true };
    });
  }

  claimDueSchedules(request: ClaimDueRequest): Promise<CronExecutionRow[]> {
    if (request.workflowNames.length === 0 || request.limit <= 0) return Promise.resolve([]);
    return writeTransaction(this.#handle, 'claimDueSchedules', () => claimDueSchedules(this.#q, request));
  }

  releaseBuffered(request: ReleaseBufferedRequest): Promise<CronExecutionRow[]> {
    if (request.workflowNames.length === 0 || request.limit <= 0) return Promise.resolve([]);
    return writeTransaction(this.#handle, 'releaseBuffered', () => releaseBuffered(this.#q, request));
  }

  insertOccurrences(rows: readonly NewCronExecution[]): Promise<{ claimed: CronExecutionRow[]; existing: number }> {
    return writeTransaction(this.#handle, 'insertOccurrences', () => insertOccurrences(this.#q, rows));
  }

  insertManualOccurrence(request: ManualOccurrenceRequest): Promise<ManualOccurrenceResult | null> {
    return writeTransaction(this.#handle, 'insertManualOccurrence', () => insertManualOccurrence(this.#q, request));
  }

  linkOccurrence(id: string, pipelineExecutionId: string, now: Date): Promise<boolean> {
    return writeTransaction(
      this.#handle,
      'linkOccurrence',
      () => this.#q.handoff.linkOccurrence.run({ id, pipelineId: pipelineExecutionId, now }).changes > 0,
    );
  }

  claimLostOccurrences(request: ClaimLostRequest): Promise<LostOccurrence[]> {
    if (request.workflowNames.length === 0 || request.limit <= 0) return Promise.resolve([]);
    return writeTransaction(this.#handle, 'claimLostOccurrences', () => claimLostOccurrences(this.#q.recover, request));
  }

  finishRecovery(id: string, runnerId: string, outcome: RecoveryOutcome, now: Date): Promise<boolean> {
    return writeTransaction(this.#handle, 'finishRecovery', () =>
      finishRecovery(this.#q.recover, id, runnerId, outcome, now),
    );
  }

  getOccurrence(id: string): Promise<CronExecutionRow | null> {
    return readTransaction(this.#handle, 'getOccurrence', () => this.#q.ledger.selectOccurrence.get({ id }) ?? null);
  }

  listOccurrences(scheduleId: string, limit: number, offset: number): Promise<CronExecutionRow[]> {
    return readTransaction(this.#handle, 'listOccurrences', () =>
      this.#q.ledger.selectOccurrencesOfSchedule.all({ scheduleId, limit, offset }),
    );
  }

  occurrenceStats(since: Date, lostBefore: Date): Promise<OccurrenceStats> {
    return readTransaction(this.#handle, 'occurrenceStats', () => occurrenceStats(this.#q.ledger, since, lostBefore));
  }

  recoveryCounts(): Promise<RecoveryCounts> {
    return readTransaction(this.#handle, 'recoveryCounts', () => this.#q.ledger.selectRecoveryCounts.get()!);
  }

  countLostOccurrences(lostBefore: Date): Promise<number> {
    return readTransaction(
      this.#handle,
      'countLostOccurrences',
      () => this.#q.ledger.countLostOccurrences.get({ lostBefore })?.count ?? 0,
    );
  }

  countAbandonedOccurrences(): Promise<number> {
    return readTransaction(
      this.#handle,
      'countAbandonedOccurrences',
      () => this.#q.ledger.countAbandonedOccurrences.get()?.count ?? 0,
    );
  }

  listStrandedSchedules(dueBefore: Date, runnable: readonly string[], limit: number): Promise<ScheduleRow[]> {
    return readTransaction(this.#handle, 'listStrandedSchedules', () =>
      selectStrandedSchedules(this.#handle.db, this.#handle.tables, dueBefore, runnable, limit).all(),
    );
  }

  findOccurrencePipeline(occurrenceId: string): Promise<string | null> {
    return readTransaction(
      this.#handle,
      'findOccurrencePipeline',
      () => this.#q.recover.selectOccurrencePipeline.get({ key: occurrenceId })?.id ?? null,
    );
  }

  deleteTerminalOccurrences(before: Date, batchSize: number): Promise<number> {
    return writeTransaction(
      this.#handle,
      'deleteTerminalOccurrences',
      () => this.#q.ledger.deleteTerminalOccurrences.run({ before, batchSize }).changes,
    );
  }
}
