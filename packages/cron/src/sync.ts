import { assertKnownKeys, type ScheduleRow, ValidationError } from '@orreryjs/core';
import type { CronScheduleInput } from './types.js';
import { checkBoolean, checkChoice, type ScheduleDefinition } from './validate.js';

/** Options of {@link ScheduleManager.sync} (`syncCronSchedules`). */
export interface SyncSchedulesOptions {
  /**
   * What happens to schedules in scope that the list does not name: `'pause'` disables them
   * with the note {@link PRUNED_NOTE}, `'delete'` deletes them (their ledger stays).
   * @default 'none'
   */
  prune?: 'none' | 'pause' | 'delete';
  /** Which existing schedules the list owns (both conditions when both are given); default: every named schedule. */
  scope?: { workflowName?: string; namePrefix?: string };
  /** Compute and return the plan, write nothing. @default false */
  dryRun?: boolean;
}

/** The plan of a sync, by schedule name: what it created, updated (and which fields), left alone and pruned. */
export interface SyncSchedulesResult {
  created: string[];
  updated: { name: string; changed: string[] }[];
  unchanged: string[];
  pruned: string[];
}

/** The note of a schedule `prune: 'pause'` disabled. */
export const PRUNED_NOTE = 'removed from the synced list';

const PRUNE_CHOICES = ['none', 'pause', 'delete'] as const satisfies readonly SyncSchedulesOptions['prune'][];
const OPTION_KEYS: readonly (keyof SyncSchedulesOptions)[] = ['prune', 'scope', 'dryRun'];
const SCOPE_KEYS = ['workflowName', 'namePrefix'] as const satisfies readonly (keyof SyncScope)[];

type SyncScope = NonNullable<SyncSchedulesOptions['scope']>;

/** Sync options, checked, with their defaults. @throws ValidationError naming the bad option. */
export function checkSyncOptions(options: SyncSchedulesOptions = {}): Required<SyncSchedulesOptions> {
  if (typeof options !== 'object' || options === null) {
    throw new ValidationError('syncCronSchedules options must be an object such as { prune: "pause" }.');
  }
  assertKnownKeys(options, OPTION_KEYS, 'syncCronSchedules option', 'options');
  const scope = options.scope ?? {};
  if (typeof scope !== 'object' || scope === null) {
    throw new ValidationError('scope must be an object such as { namePrefix: "billing." }.');
  }
  assertKnownKeys(scope, SCOPE_KEYS, 'scope field', 'scope fields');
  for (const key of SCOPE_KEYS) {
    const value = scope[key];
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      throw new ValidationError(
        `scope.${key} must be a non-empty string, got ${JSON.stringify(value) ?? 'undefined'}.`,
      );
    }
  }
  return {
    prune: checkChoice('prune', options.prune ?? 'none', PRUNE_CHOICES),
    scope,
    dryRun: checkBoolean('dryRun', options.dryRun ?? false),
  };
}

/** True when the sync's scope owns `schedule` (an unnamed schedule cannot be listed, so none owns it). */
export function inScope(
  schedule: Pick<ScheduleRow, 'name' | 'workflowName'>,
  scope: SyncSchedulesOptions['scope'] & object,
): boolean {
  if (schedule.name === null) return false;
  if (scope.workflowName !== undefined && schedule.workflowName !== scope.workflowName) return false;
  return scope.namePrefix === undefined || schedule.name.startsWith(scope.namePrefix);
}

/**
 * Validates every entry of a sync list with `validate` (addCronSchedule's validation), then
 * refuses duplicate names and entries outside the scope. An entry's error keeps its type, its
 * message prefixed with the entry's position.
 * @throws ValidationError (or the validator's own subclass) for the first bad entry.
 */
export function validateSyncList<T extends { definition: ScheduleDefinition }>(
  inputs: readonly CronScheduleInput[],
  scope: SyncSchedulesOptions['scope'] & object,
  validate: (input: CronScheduleInput) => T,
): T[] {
  if (!Array.isArray(inputs)) {
    throw new ValidationError('syncCronSchedules takes an array of schedule inputs (an empty array prunes the scope).');
  }
  const seen = new Map<string, number>();
  return inputs.map((input, index) => {
    try {
      const entry = validate(input);
      const { name, workflowName } = entry.definition;
      const earlier = seen.get(name);
      if (earlier !== undefined) {
        throw new ValidationError(
          `name "${name}" is listed twice (also at schedules[${earlier}]); names identify schedules, so list each once.`,
        );
      }
      seen.set(name, index);
      if (!inScope({ name, workflowName }, scope)) {
        throw new ValidationError(
          `schedule "${name}" of workflow "${workflowName}" is outside the sync's scope ${JSON.stringify(scope)}; widen the scope or leave it out of the list.`,
        );
      }
      return entry;
    } catch (error) {
      throw atEntry(error, index);
    }
  });
}

/** `error` with its message prefixed by the list position it is about (its type kept). */
export function atEntry(error: unknown, index: number): unknown {
  if (error instanceof Error && !error.message.startsWith('schedules[')) {
    error.message = `schedules[${index}]: ${error.message}`;
  }
  return error;
}
