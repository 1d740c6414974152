export { normalizeCronExpression } from './cron-expression.js';
export {
  type NextOccurrencesOptions,
  nextOccurrences,
  type OccurrencesBetweenOptions,
  occurrencesBetween,
  type ParsedCron,
  parseCronExpression,
} from './occurrences.js';
export { validateTimezone } from './timezone.js';
