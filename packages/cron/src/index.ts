export { normalizeCronExpression } from './cron-expression.js';
export type {
  CronAbandonedEvent,
  CronBufferedEvent,
  CronEmit,
  CronEvents,
  CronFiredEvent,
  CronLostEvent,
  CronMissedEvent,
  CronPausedEvent,
  CronRecoveredEvent,
  CronSkippedEvent,
} from './events.js';
export type { HistoryOptions } from './ledger.js';
export type { DstGap, DstRepeated, DstRules } from './local-time.js';
export {
  type NextOccurrencesOptions,
  nextOccurrences,
  type OccurrencesBetweenOptions,
  occurrencesBetween,
  type ParsedCron,
  parseCronExpression,
} from './occurrences.js';
export type { CronFaults, CronServiceOptions, InTransactionHandoff, WorkflowCatalog } from './options.js';
export type { RecoveryResult } from './recover.js';
export {
  CATCHUP_POLICIES,
  CATCHUP_POLICY_DESCRIPTIONS,
  DST_DEFAULTS,
  DST_GAP_CHOICES,
  DST_GAP_DESCRIPTIONS,
  DST_REPEATED_CHOICES,
  DST_REPEATED_DESCRIPTIONS,
  MAX_NOTE_LENGTH,
  OVERLAP_POLICIES,
  OVERLAP_POLICY_DESCRIPTIONS,
  SCHEDULE_DEFAULTS,
} from './schedule-fields.js';
export type { TickResult } from './scheduler.js';
export type { AddScheduleOptions, ListSchedulesFilter } from './schedules.js';
export { type CronHealth, CronService } from './service.js';
export { CRON_DEFAULTS, type CronSettings } from './settings.js';
export { assertKnownKeys } from './suggest.js';
export { PRUNED_NOTE, type SyncSchedulesOptions, type SyncSchedulesResult } from './sync.js';
export { validateTimezone } from './timezone.js';
export type { CronExecution, CronExecutionStats, CronSchedule, CronScheduleInput, RecoveryStats } from './types.js';
export type { TriggerOptions } from './validate.js';
