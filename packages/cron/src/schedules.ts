import {
  checkPage,
  DatabaseError,
  newId,
  ScheduleConflictError,
  ScheduleNotFoundError,
  type ScheduleRow,
  type ScheduleSyncWrites,
  UniversalUuid,
  ValidationError,
} from '@orreryjs/core';
import type { CronServiceOptions } from './options.js';
import { failurePauseNote } from './plan.js';
import {
  atEntry,
  checkSyncOptions,
  inScope,
  PRUNED_NOTE,
  type SyncSchedulesOptions,
  type SyncSchedulesResult,
  validateSyncList,
} from './sync.js';
import { type CronSchedule, type CronScheduleInput, toCronSchedule } from './types.js';
import { assertCanFire, checkNote, type ScheduleDefinition, validateScheduleInput } from './validate.js';
import { firstRunAt, firstRunAtMemo, sameTiming, TIMING_FIELDS, timingChanges } from './window.js';

/** Filter of {@link ScheduleManager.list}. */
export interface ListSchedulesFilter {
  enabledOnly?: boolean;
  workflowName?: string;
  /** @default unlimited */
  limit?: number;
  /** @default 0 */
  offset?: number;
}

/** What {@link ScheduleManager.add} does when the name is taken by another definition. */
export interface AddScheduleOptions {
  /**
   * `'error'` raises ScheduleConflictError; `'update'` rewrites the definition (never `enabled`).
   * @default 'error'
   */
  onConflict?: 'error' | 'update';
}

type ScheduleDeps = Pick<CronServiceOptions, 'store' | 'clock' | 'settings' | 'workflows'>;
type SchedulePatch = Partial<Omit<ScheduleRow, 'id' | 'version' | 'createdAt'>>;

// A compare-and-set loses only to a concurrent write (a tick advancing the schedule); give up after this many.
const MAX_CAS_ATTEMPTS = 50;

/**
 * Schedule management: add (idempotent by name), read, update, enable/disable, delete. Works
 * without the scheduler loop. Every update is a compare-and-set on `version`, retried on a
 * lost race, so an edit never overwrites a tick's advance of `nextRunAt` or another edit.
 */
export class ScheduleManager {
  readonly #deps: ScheduleDeps;
  readonly #onRetimed: (nextRunAt: Date | null) => void;

  /** `onRetimed` hears each nextRunAt this manager writes, so the scheduler can wake for it. */
  constructor(deps: ScheduleDeps, onRetimed: (nextRunAt: Date | null) => void = () => {}) {
    this.#deps = deps;
    this.#onRetimed = onRetimed;
  }

  /**
   * Adds a schedule, or returns the one with the same name and definition.
   * @throws ScheduleConflictError when the name holds another definition (unless onConflict 'update').
   */
  async add(input: CronScheduleInput, options: AddScheduleOptions = {}): Promise<CronSchedule> {
    const onConflict = options.onConflict ?? 'error';
    const { definition, enabled, note } = validateScheduleInput(input, this.#limits());
    const now = this.#deps.clock.now();
    try {
      assertCanFire(definition, now);
    } catch (error) {
      // Re-adding at start-up a schedule whose window has since ended returns it unchanged.
      const existing = await this.#deps.store.getScheduleByName(definition.name);
      if (existing !== null && sameDefinition(existing, definition)) return toCronSchedule(existing);
      throw error;
    }
    const { schedule, created } = await this.#deps.store.insertSchedule(
      newRow(definition, enabled, note, now, firstRunAt(definition, now)),
    );
    if (created) this.#onRetimed(schedule.nextRunAt);
    const fields = definitionChanges(schedule, definition);
    if (created || fields.length === 0) return toCronSchedule(schedule);
    if (onConflict !== 'update') {
      throw new ScheduleConflictError(
        `A schedule named "${definition.name}" already exists with another definition (${describeDefinition(schedule)}); it differs in ${fields.join(', ')}: pass { onConflict: 'update' } to replace it, or choose another name.`,
        { fields },
      );
    }
    return toCronSchedule(await this.#update(schedule, (current) => this.#retime(current, definition)));
  }

  /**
   * Makes the stored schedules match `inputs`, by name, in one transaction: creates the new
   * ones, rewrites the definitions that differ (never `enabled`), and prunes the schedules in
   * scope that the list leaves out. Every entry is validated first, so a bad one anywhere
   * refuses the whole list with nothing written. A write that loses to a concurrent one (a
   * tick advancing a schedule) rolls the whole sync back; it is then planned again from the
   * latest rows, as updates are.
   * @throws ValidationError (or a subclass) naming the entry, WorkflowNotFoundError.
   */
  async sync(inputs: readonly CronScheduleInput[], options?: SyncSchedulesOptions): Promise<SyncSchedulesResult> {
    const { prune, scope, dryRun } = checkSyncOptions(options);
    const entries = validateSyncList(inputs, scope, (input) => validateScheduleInput(input, this.#limits()));
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt += 1) {
      const existing = await this.#deps.store.listSchedules({ limit: Number.MAX_SAFE_INTEGER, offset: 0 });
      const byName = new Map(existing.map((row) => [row.name, row]));
      const now = this.#deps.clock.now();
      const firstRun = firstRunAtMemo(now);
      const result: SyncSchedulesResult = { created: [], updated: [], unchanged: [], pruned: [] };
      const writes: ScheduleSyncWrites = { inserts: [], updates: [], deletes: [] };
      entries.forEach(({ definition, enabled, note }, index) => {
        const row = byName.get(definition.name);
        try {
          if (row === undefined) {
            // A new schedule is refused as addCronSchedule refuses it: one that would never fire.
            const nextRunAt = firstRun(definition);
            if (nextRunAt === null) assertCanFire(definition, now);
            writes.inserts.push(newRow(definition, enabled, note, now, nextRunAt));
            result.created.push(definition.name);
            return;
          }
          const changed = definitionChanges(row, definition);
          if (changed.length === 0) {
            result.unchanged.push(definition.name);
            return;
          }
          const patch = syncPatch(row, definition, changed, now, firstRun);
          writes.updates.push({ id: row.id, expectedVersion: row.version, patch });
          result.updated.push({ name: definition.name, changed });
        } catch (error) {
          throw atEntry(error, index);
        }
      });
      const listed = new Set(entries.map(({ definition }) => definition.name));
      for (const row of existing) {
        if (prune === 'none' || listed.has(row.name ?? '') || !inScope(row, scope)) continue;
        if (prune === 'delete') {
          writes.deletes.push({ id: row.id, expectedVersion: row.version });
        } else if (row.enabled) {
          const patch = { ...this.#enabledPatch(row, false, row), note: PRUNED_NOTE };
          writes.updates.push({ id: row.id, expectedVersion: row.version, patch });
        } else {
          // Already paused (by an earlier sync or an operator, whose note stays): nothing to write.
          continue;
        }
        result.pruned.push(row.name as string);
      }
      if (dryRun) return result;
      if (await this.#deps.store.applyScheduleSync(writes)) {
        for (const inserted of writes.inserts) this.#onRetimed(inserted.nextRunAt);
        for (const { patch } of writes.updates) if (patch.nextRunAt !== undefined) this.#onRetimed(patch.nextRunAt);
        return result;
      }
    }
    throw new DatabaseError(
      `The schedules kept changing under ${MAX_CAS_ATTEMPTS} sync attempts; retry syncCronSchedules.`,
    );
  }

  /** @throws ScheduleNotFoundError for an unknown id or name. */
  async get(idOrName: string): Promise<CronSchedule> {
    return toCronSchedule(await this.resolve(idOrName));
  }

  /** Schedules oldest first. */
  async list(filter: ListSchedulesFilter = {}): Promise<CronSchedule[]> {
    const page = checkPage(filter);
    const rows = await this.#deps.store.listSchedules({
      ...(filter.enabledOnly === undefined ? {} : { enabledOnly: filter.enabledOnly }),
      ...(filter.workflowName === undefined ? {} : { workflowName: filter.workflowName }),
      ...page,
    });
    return rows.map(toCronSchedule);
  }

  /**
   * Changes some fields; the result is validated whole. A new expression, zone or window
   * (or enabling) moves `nextRunAt` to the first occurrence after now.
   * @throws ScheduleNotFoundError, ScheduleConflictError (name taken), ValidationError, WorkflowNotFoundError.
   */
  async update(idOrName: string, patch: Partial<CronScheduleInput>): Promise<CronSchedule> {
    const current = await this.resolve(idOrName);
    const changed = await this.#update(current, (row) => {
      // A schedule stored before names were required has none: the merged input is refused until the patch gives one.
      const merged = { ...inputOf(row), ...definedFields(patch) } as CronScheduleInput;
      const workflowChanged = patch.workflowName !== undefined && patch.workflowName !== row.workflowName;
      const { definition, enabled, note } = validateScheduleInput(merged, this.#limits(), workflowChanged);
      return {
        ...this.#retime(row, definition),
        ...this.#enabledPatch(row, enabled, definition),
        ...(note === undefined ? {} : { note }),
      };
    });
    return toCronSchedule(changed);
  }

  /**
   * Enables or disables a schedule. Enabling sets `nextRunAt` to the first occurrence after
   * now, so a schedule enabled after a long pause fires nothing stale.
   * @throws ScheduleNotFoundError for an unknown id or name.
   */
  async setEnabled(idOrName: string, enabled: boolean, options: { note?: string } = {}): Promise<CronSchedule> {
    if (typeof enabled !== 'boolean') {
      throw new ValidationError(`enabled must be true or false, got ${String(enabled)}.`);
    }
    const note = options?.note === undefined ? undefined : checkNote(options.note);
    const current = await this.resolve(idOrName);
    return toCronSchedule(
      await this.#update(current, (row) => ({
        ...this.#enabledPatch(row, enabled, row),
        // Disabling stores the note given (keeping the stored one without); enabling clears it.
        ...(enabled ? (row.note === null ? {} : { note: null }) : note === undefined ? {} : { note }),
      })),
    );
  }

  /**
   * Disables a `pauseOnFailure` schedule after one of its pipelines failed, with the note
   * "paused after failure of execution <id>". Null when the schedule is gone, does not pause
   * on failure, or is already disabled: nothing to report.
   */
  async pauseAfterFailure(scheduleId: string, executionId: string): Promise<ScheduleRow | null> {
    const current = await this.#deps.store.getSchedule(scheduleId);
    if (current === null || !current.pauseOnFailure || !current.enabled) return null;
    const note = failurePauseNote(executionId);
    const paused = await this.#update(current, (row) =>
      row.enabled && row.pauseOnFailure ? { ...this.#enabledPatch(row, false, row), note } : {},
    );
    return paused.note === note && !paused.enabled ? paused : null;
  }

  /**
   * Deletes a schedule; its ledger stays. Its `buffered` occurrences become `skipped` (nothing
   * would release them); a `claimed` one left behind is abandoned by recovery ("schedule was
   * deleted") unless its pipeline already exists.
   * @throws ScheduleNotFoundError for an unknown id or name.
   */
  async delete(idOrName: string): Promise<void> {
    const schedule = await this.resolve(idOrName);
    if (!(await this.#deps.store.deleteSchedule(schedule.id))) throw notFound(idOrName);
  }

  /**
   * The stored schedule: a UUID-shaped string (any case) is an id, anything else a name.
   * @throws ScheduleNotFoundError when there is none.
   */
  async resolve(idOrName: string): Promise<ScheduleRow> {
    const id = scheduleIdOf(idOrName);
    const row =
      id !== undefined
        ? await this.#deps.store.getSchedule(id)
        : typeof idOrName === 'string' && !UniversalUuid.isUuid(idOrName)
          ? await this.#deps.store.getScheduleByName(idOrName)
          : null;
    if (row === null) throw notFound(idOrName);
    return row;
  }

  #limits() {
    const { maxContextBytes, maxRecoveryAttempts } = this.#deps.settings;
    return { workflows: this.#deps.workflows, maxContextBytes, maxRecoveryAttempts };
  }

  /**
   * The patch writing `definition` over `row`, re-timed when the timing changed. Switching
   * `pauseOnFailure` on counts failures from now: an older failure does not pause it.
   */
  #retime(row: ScheduleRow, definition: ScheduleDefinition): SchedulePatch {
    const now = this.#deps.clock.now();
    const patch: SchedulePatch = { ...definition, updatedAt: now };
    if (definition.pauseOnFailure && !row.pauseOnFailure) patch.enabledAt = now;
    if (sameTiming(row, definition)) return patch;
    assertCanFire(definition, now);
    if (row.enabled) patch.nextRunAt = firstRunAt(definition, now);
    return patch;
  }

  #enabledPatch(row: ScheduleRow, enabled: boolean, timing: ScheduleDefinition | ScheduleRow): SchedulePatch {
    if (row.enabled === enabled) return {};
    const now = this.#deps.clock.now();
    if (!enabled) return { enabled, nextRunAt: null, updatedAt: now };
    // A failure before now (the one it was paused for) no longer counts for pauseOnFailure.
    return { enabled, nextRunAt: firstRunAt(timing, now), enabledAt: now, updatedAt: now };
  }

  /** Compare-and-set loop: recomputes the patch from the latest row until it lands. */
  async #update(row: ScheduleRow, patchOf: (current: ScheduleRow) => SchedulePatch): Promise<ScheduleRow> {
    let current = row;
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt += 1) {
      const patch = patchOf(current);
      if (Object.keys(patch).length === 0) return current;
      const updated = await this.#deps.store.updateSchedule(current.id, current.version, patch);
      if (updated !== null) {
        if (patch.nextRunAt !== undefined) this.#onRetimed(updated.nextRunAt);
        return updated;
      }
      const latest = await this.#deps.store.getSchedule(current.id);
      if (latest === null) throw notFound(current.id);
      current = latest;
    }
    throw new DatabaseError(
      `Schedule ${row.id} kept changing under ${MAX_CAS_ATTEMPTS} update attempts; retry the update.`,
    );
  }
}

/** The canonical id when `idOrName` is a valid UUID; undefined for names. */
function scheduleIdOf(idOrName: string): string | undefined {
  if (typeof idOrName !== 'string' || !UniversalUuid.isUuid(idOrName)) return undefined;
  try {
    return UniversalUuid.parse(idOrName).toString();
  } catch {
    return undefined;
  }
}

function notFound(idOrName: string): ScheduleNotFoundError {
  const kind = typeof idOrName === 'string' && UniversalUuid.isUuid(idOrName) ? 'id' : 'name';
  return new ScheduleNotFoundError(
    `No cron schedule has ${kind} ${JSON.stringify(idOrName)}; list them with listCronSchedules() (names are case-sensitive).`,
  );
}

/** True when a stored schedule has exactly this (normalised) definition. */
function sameDefinition(row: ScheduleRow, definition: ScheduleDefinition): boolean {
  return definitionChanges(row, definition).length === 0;
}

/**
 * The definition fields (every field but `enabled` and `note`) in which a stored schedule
 * differs from `definition`, after normalisation; empty when it is the same definition.
 */
function definitionChanges(row: ScheduleRow, definition: ScheduleDefinition): string[] {
  const changed: string[] = [];
  if (row.name !== definition.name) changed.push('name');
  if (row.workflowName !== definition.workflowName) changed.push('workflowName');
  changed.push(...timingChanges(row, definition));
  if (!sameJson(row.context, definition.context)) changed.push('context');
  if (row.catchupPolicy !== definition.catchupPolicy) changed.push('catchupPolicy');
  if (row.overlapPolicy !== definition.overlapPolicy) changed.push('overlapPolicy');
  if (row.jitterMs !== definition.jitterMs) changed.push('jitterMs');
  if (row.pauseOnFailure !== definition.pauseOnFailure) changed.push('pauseOnFailure');
  if (row.maxRuns !== definition.maxRuns) changed.push('maxRuns');
  return changed;
}

/**
 * A sync's patch writing `definition` over `row`, which differs in the fields `changed`: only
 * those fields (a sync that changes every expression then rewrites one column, not the whole
 * definition), re-timed as {@link ScheduleManager.add}'s update re-times: when a timing
 * field changed, the first occurrence from `now` (refused when there is none); and counting
 * `pauseOnFailure` failures from now when it is switched on.
 * @throws ValidationError when the new timing would never fire.
 */
function syncPatch(
  row: ScheduleRow,
  definition: ScheduleDefinition,
  changed: readonly string[],
  now: Date,
  firstRun: (timing: ScheduleDefinition) => Date | null,
): SchedulePatch {
  const patch: Record<string, unknown> = { updatedAt: now };
  let retimed = false;
  for (const field of changed) {
    patch[field] = definition[field as keyof ScheduleDefinition];
    if (TIMING_FIELDS.has(field)) retimed = true;
  }
  if (definition.pauseOnFailure && !row.pauseOnFailure) patch.enabledAt = now;
  if (retimed) {
    const nextRunAt = firstRun(definition);
    if (nextRunAt === null) assertCanFire(definition, now);
    if (row.enabled) patch.nextRunAt = nextRunAt;
  }
  return patch as SchedulePatch;
}

/** The row of a new schedule created `now`, whose first occurrence from now is `firstRun` (see firstRunAt). */
function newRow(
  definition: ScheduleDefinition,
  enabled: boolean,
  note: string | null | undefined,
  now: Date,
  firstRun: Date | null,
) {
  return {
    id: newId(),
    ...definition,
    enabled,
    enabledAt: now,
    note: note ?? null,
    runCount: 0,
    nextRunAt: enabled ? firstRun : null,
    lastRunAt: null,
    version: 1,
    createdAt: now,
    updatedAt: now,
  } satisfies ScheduleRow;
}

function describeDefinition(row: ScheduleRow): string {
  return `workflow "${row.workflowName}", "${row.cronExpression}" in ${row.timezone}`;
}

/** True when two JSON values are equal whatever their objects' key order (the plain text first: usually enough). */
function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b) || canonicalJson(a) === canonicalJson(b);
}

/** JSON with object keys sorted, so that key order does not make two contexts differ. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}

/** A stored schedule as input, so that a patch can be merged onto it and validated whole. */
function inputOf(row: ScheduleRow): Partial<CronScheduleInput> {
  return {
    ...(row.name === null ? {} : { name: row.name }),
    workflowName: row.workflowName,
    cronExpression: row.cronExpression,
    timezone: row.timezone,
    enabled: row.enabled,
    context: row.context,
    catchupPolicy: row.catchupPolicy,
    overlapPolicy: row.overlapPolicy,
    jitterMs: row.jitterMs,
    pauseOnFailure: row.pauseOnFailure,
    maxRuns: row.maxRuns,
    ...(row.dst === null ? {} : { dst: row.dst }),
    ...(row.startAt === null ? {} : { startAt: row.startAt }),
    ...(row.endAt === null ? {} : { endAt: row.endAt }),
  };
}

/** The fields a patch sets: undefined leaves a field as it is; null clears startAt or endAt. */
function definedFields(patch: Partial<CronScheduleInput>): Partial<CronScheduleInput> {
  if (typeof patch !== 'object' || patch === null) return {};
  return Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined));
}
