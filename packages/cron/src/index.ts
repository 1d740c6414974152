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
export { normalizeCronExpression } from './expression/cron-expression.js';
export {
  DST_DEFAULTS,
  DST_GAP_CHOICES,
  DST_GAP_DESCRIPTIONS,
  DST_REPEATED_CHOICES,
  DST_REPEATED_DESCRIPTIONS,
  type DstGap,
  type DstRepeated,
  type DstRules,
} from './expression/dst.js';
export {
  type NextOccurrencesOptions,
  nextOccurrences,
  type OccurrencesBetweenOptions,
  occurrencesBetween,
  type ParsedCron,
  parseCronExpression,
} from './expression/occurrences.js';
export { validateTimezone } from './expression/timezone.js';
export type { HistoryOptions } from './ledger.js';
export type { CronFaults, CronServiceOptions, InTransactionHandoff, WorkflowCatalog } from './options.js';
export type { RecoveryResult } from './recover.js';
export {
  CATCHUP_POLICIES,
  CATCHUP_POLICY_DESCRIPTIONS,
  MAX_NOTE_LENGTH,
  OVERLAP_POLICIES,
  OVERLAP_POLICY_DESCRIPTIONS,
  SCHEDULE_DEFAULTS,
} from './schedule-fields.js';
export type { TickResult } from './scheduler.js';
export type { AddScheduleOptions, ListSchedulesFilter } from './schedules.js';
export { type CronHealth, CronService } from './service.js';
export { CRON_DEFAULTS, type CronSettings } from './settings.js';
export { PRUNED_NOTE, type SyncSchedulesOptions, type SyncSchedulesResult } from './sync.js';
export type { CronExecution, CronExecutionStats, CronSchedule, CronScheduleInput, RecoveryStats } from './types.js';
export type { TriggerOptions } from './validate.js';
