import type { TriggerRule } from './workflow.js';

/** The terminal states a dependency can be in when its dependents are judged. */
export type TerminalTaskStatus = 'completed' | 'failed' | 'skipped' | 'cancelled';

/**
 * Whether a task whose dependencies all ended in `statuses` should run. A skipped
 * dependency is neither a success nor a failure. A task without dependencies always runs.
 */
export function isTriggerMet(rule: TriggerRule, statuses: readonly TerminalTaskStatus[]): boolean {
  if (statuses.length === 0) return true;
  const succeeded = statuses.filter((s) => s === 'completed').length;
  const failed = statuses.filter((s) => s === 'failed').length;
  switch (rule) {
    case 'all_success':
      return succeeded === statuses.length;
    case 'all_done':
      return true;
    case 'one_success':
      return succeeded > 0;
    case 'one_failed':
      return failed > 0;
    case 'none_failed':
      return failed === 0;
  }
}
