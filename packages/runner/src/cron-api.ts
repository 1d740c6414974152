import { type Clock, type PipelineExecution, ValidationError } from '@orreryjs/core';
import type {
  CronExecution,
  CronExecutionStats,
  CronSchedule,
  CronScheduleInput,
  CronService,
  HistoryOptions,
  ListSchedulesFilter,
  RecoveryStats,
  SyncSchedulesOptions,
  SyncSchedulesResult,
  TriggerOptions,
} from '@orreryjs/cron';
import { inProducerSpan, SPAN_ATTRIBUTES } from './tracing.js';

/** What the schedule calls need from the client that offers them. */
export interface ScheduleCallsParts {
  /** The service the calls delegate to. */
  cron: CronService;
  /** @throws ConfigurationError after the client's `close()` (a runner's `shutdown()`). */
  assertOpen(): void;
  /**
   * Checks that `name` is a workflow this process registered or some runner stored.
   * @throws WorkflowNotFoundError naming the known workflows.
   */
  checkWorkflowName(name: string): Promise<void>;
  /** Re-reads the workflows other processes stored, before a call that starts a schedule's workflow. */
  refreshWorkflows(): Promise<void>;
  /** How long the runners keep ledger rows (`retention.cronLedgerMs`): a backfill must not start before it. */
  ledgerRetentionMs: number;
  clock: Clock;
}

/**
 * The cron half of the {@link OrreryClient} API (and so of {@link DefaultRunner}'s): schedule
 * management, triggers, backfills and the ledger, each delegated to the CronService. Every
 * method works before `start()` and with `enableCronScheduling: false`, and rejects with
 * ConfigurationError after `shutdown()` (a client's `close()`). The client offers these calls
 * as its own (see {@link SCHEDULE_CALLS}); they live apart so that each file holds one concern.
 */
export class ScheduleCalls {
  readonly #parts: ScheduleCallsParts;

  constructor(parts: ScheduleCallsParts) {
    this.#parts = parts;
  }

  /**
   * Adds a cron schedule. Re-adding the same name with the same definition returns the
   * existing schedule, so calling it at every start-up is safe; `enabled` is never overwritten.
   * @throws InvalidCronExpressionError, InvalidTimezoneError, ContextError, ValidationError naming the bad field.
   * @throws WorkflowNotFoundError when neither this process nor any runner on the database registered the workflow.
   * @throws ScheduleConflictError when the name holds another definition and `onConflict` is not `'update'`.
   */
  async addCronSchedule(
    input: CronScheduleInput,
    options?: { onConflict?: 'error' | 'update' },
  ): Promise<CronSchedule> {
    this.#parts.assertOpen();
    const workflowName = (input as Partial<CronScheduleInput> | null)?.workflowName;
    if (typeof workflowName === 'string') await this.#parts.checkWorkflowName(workflowName);
    return this.#parts.cron.addSchedule(input, options);
  }

  /**
   * Makes the stored schedules match `schedules` (schedules declared in code), by name, in one
   * transaction: creates the new ones, rewrites those whose definition differs (never
   * `enabled`), and with `prune` pauses or deletes the schedules in `scope` the list leaves
   * out. Returns the plan (`updated[].changed` names the fields that differ); `dryRun` only
   * computes it. Bad input anywhere refuses the whole list and writes nothing.
   * @throws ValidationError (InvalidCronExpressionError, …) naming the entry (`schedules[i]`) and field.
   * @throws WorkflowNotFoundError when a listed workflow is registered nowhere.
   */
  async syncCronSchedules(
    schedules: CronScheduleInput[],
    options?: SyncSchedulesOptions,
  ): Promise<SyncSchedulesResult> {
    this.#parts.assertOpen();
    if (Array.isArray(schedules)) {
      const workflowNames = new Set(
        schedules.map((input) => (input as Partial<CronScheduleInput> | null)?.workflowName),
      );
      for (const workflowName of workflowNames) {
        if (typeof workflowName === 'string') await this.#parts.checkWorkflowName(workflowName);
      }
    }
    return this.#parts.cron.syncSchedules(schedules, options);
  }

  /**
   * Cron schedules, oldest first.
   * @throws ValidationError for a bad limit or offset.
   */
  async listCronSchedules(filter?: ListSchedulesFilter): Promise<CronSchedule[]> {
    this.#parts.assertOpen();
    return this.#parts.cron.listSchedules(filter);
  }

  /**
   * One schedule, by id (a UUID-shaped string, any case) or name.
   * @throws ScheduleNotFoundError for an unknown id or name.
   */
  async getCronSchedule(idOrName: string): Promise<CronSchedule> {
    this.#parts.assertOpen();
    return this.#parts.cron.getSchedule(idOrName);
  }

  /**
   * Changes some fields of a schedule, validated whole before anything is written. A new
   * expression, timezone or window re-times it from now: slots due but unclaimed are dropped.
   * @throws ScheduleNotFoundError, ScheduleConflictError (name taken), ValidationError, WorkflowNotFoundError.
   */
  async updateCronSchedule(idOrName: string, patch: Partial<CronScheduleInput>): Promise<CronSchedule> {
    this.#parts.assertOpen();
    const workflowName = (patch as Partial<CronScheduleInput> | null)?.workflowName;
    if (typeof workflowName === 'string') await this.#parts.checkWorkflowName(workflowName);
    return this.#parts.cron.updateSchedule(idOrName, patch);
  }

  /**
   * Enables or disables a schedule. Enabling fires nothing stale: the next run is the first
   * slot strictly after now (and after `startAt`). Disabling stores `note` (why it is paused)
   * when given; enabling clears the note.
   * @throws ScheduleNotFoundError for an unknown id or name.
   */
  async setCronScheduleEnabled(idOrName: string, enabled: boolean, options?: { note?: string }): Promise<CronSchedule> {
    this.#parts.assertOpen();
    return this.#parts.cron.setEnabled(idOrName, enabled, options);
  }

  /**
   * Deletes a schedule; its ledger (`getCronExecutionHistory`) is kept, its `buffered`
   * occurrences recorded as `skipped`.
   * @throws ScheduleNotFoundError for an unknown id or name.
   */
  async deleteCronSchedule(idOrName: string): Promise<void> {
    this.#parts.assertOpen();
    return this.#parts.cron.deleteSchedule(idOrName);
  }

  /**
   * Fires a schedule now, enabled or not, audited as a `manual` ledger row. It follows the
   * schedule's overlap policy while an earlier occurrence is active (Temporal's behaviour):
   * `skip` records it `skipped` and throws; `buffer_one`/`buffer_all` buffer it, and the
   * returned execution's `wait()` resolves once it has run (its `id` is then the ledger row's
   * id until a tick hands it off); `cancel_other` cancels the active pipeline; `allow` starts
   * at once. `{ overlapPolicy: 'allow' }` starts it whatever the policy.
   * @throws ValidationError for unknown options or values.
   * @throws ScheduleOverlapError when a `skip` schedule has an active occurrence; it names the active pipeline.
   * @throws ScheduleNotFoundError, WorkflowNotFoundError.
   */
  async triggerCronSchedule(idOrName: string, options?: TriggerOptions): Promise<PipelineExecution> {
    this.#parts.assertOpen();
    // The handoff's orrery.cron.handoff span (in executeAsync) is this span's child.
    return inProducerSpan('orrery.execute', { [SPAN_ATTRIBUTES.schedule]: String(idOrName) }, async (span) => {
      await this.#parts.refreshWorkflows();
      const execution = await this.#parts.cron.trigger(idOrName, options);
      span.setAttributes({
        [SPAN_ATTRIBUTES.workflow]: execution.workflowName,
        [SPAN_ATTRIBUTES.executionId]: execution.id,
      });
      return execution;
    });
  }

  /**
   * Runs the slots of [start, end) that have no ledger row yet; a second call over the same
   * range creates nothing. A range that starts before now − `retention.cronLedgerMs` is
   * refused: the runners' retention sweep may already have deleted the ledger rows of such
   * slots, so they would run a second time.
   * @throws ValidationError for an empty or future range, more than 10,000 slots, or a range
   *   older than the ledger retention.
   * @throws ScheduleNotFoundError, WorkflowNotFoundError.
   */
  async backfillCronSchedule(
    idOrName: string,
    range: { start: Date; end: Date },
  ): Promise<{ created: number; existing: number }> {
    this.#parts.assertOpen();
    this.#assertWithinRetention(range);
    // One span for the backfill; each slot's handoff is an orrery.cron.handoff child of it.
    return inProducerSpan('orrery.execute', { [SPAN_ATTRIBUTES.schedule]: String(idOrName) }, async () => {
      await this.#parts.refreshWorkflows();
      return this.#parts.cron.backfill(idOrName, range);
    });
  }

  /**
   * A schedule's ledger rows, newest first (deleted schedules included, by id).
   * @throws ScheduleNotFoundError for an unknown id or name.
   */
  async getCronExecutionHistory(idOrName: string, options?: HistoryOptions): Promise<CronExecution[]> {
    this.#parts.assertOpen();
    return this.#parts.cron.history(idOrName, options);
  }

  /** Ledger counts by status and the fire delay (mean, p99) since `since` (default: the last 24 hours). */
  async getCronExecutionStats(options?: { since?: Date }): Promise<CronExecutionStats> {
    this.#parts.assertOpen();
    return this.#parts.cron.stats(options);
  }

  /** What recovery has done: recovered, abandoned and still-lost occurrences. */
  async getRecoveryStats(): Promise<RecoveryStats> {
    this.#parts.assertOpen();
    return this.#parts.cron.recoveryStats();
  }

  #assertWithinRetention(range: { start: Date; end: Date }): void {
    const start = (range as { start?: unknown } | null)?.start;
    // Starts that are not valid instants (or before the year 1) get the range checks' own message.
    if (!(start instanceof Date) || Number.isNaN(start.getTime()) || start.getUTCFullYear() < 1) return;
    const retentionMs = this.#parts.ledgerRetentionMs;
    const oldest = new Date(this.#parts.clock.now().getTime() - retentionMs);
    if (start < oldest) {
      throw new ValidationError(
        `Backfill start ${start.toISOString()} is older than the cron ledger's retention (${Math.round(retentionMs / 86_400_000)} days, retention.cronLedgerMs): ledger rows before ${oldest.toISOString()} may already be deleted, so their slots would run again. Start the range at or after ${oldest.toISOString()}.`,
      );
    }
  }
}

/** Every call of {@link ScheduleCalls}, which the client offers as its own. */
export const SCHEDULE_CALLS = [
  'addCronSchedule',
  'syncCronSchedules',
  'listCronSchedules',
  'getCronSchedule',
  'updateCronSchedule',
  'setCronScheduleEnabled',
  'deleteCronSchedule',
  'triggerCronSchedule',
  'backfillCronSchedule',
  'getCronExecutionHistory',
  'getCronExecutionStats',
  'getRecoveryStats',
] as const satisfies ReadonlyArray<keyof ScheduleCalls>;
