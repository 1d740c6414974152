/**
 * Every error Orrery throws is an {@link OrreryError} with a stable `code`, so callers can
 * branch on `code` even when two copies of the package are loaded (where `instanceof` fails).
 */
/** Marks Orrery's errors; `Symbol.for` makes every copy of the package agree on it. */
const ORRERY_ERROR = Symbol.for('orrery.error');

export class OrreryError extends Error {
  /** Stable, SCREAMING_SNAKE identifier of the error kind, e.g. `SCHEDULE_NOT_FOUND`. */
  readonly code: string;

  /** The brand {@link isOrreryError} checks, on the prototype of every Orrery error. */
  get [ORRERY_ERROR](): true {
    return true;
  }

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Input was refused before anything was written. Subclasses name what kind of input. */
export class ValidationError extends OrreryError {
  constructor(message: string, options?: { cause?: unknown }, code = 'VALIDATION') {
    super(code, message, options);
  }
}

/** A cron expression could not be parsed; the message names the offending field. */
export class InvalidCronExpressionError extends ValidationError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options, 'INVALID_CRON_EXPRESSION');
  }
}

/** A timezone is not a known IANA zone name. */
export class InvalidTimezoneError extends ValidationError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options, 'INVALID_TIMEZONE');
  }
}

/** A workflow definition is malformed: empty, duplicate or unknown task ids, or a cycle. */
export class WorkflowValidationError extends ValidationError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options, 'WORKFLOW_VALIDATION');
  }
}

/** A context value does not survive a JSON round trip, or the context is too large. */
export class ContextError extends ValidationError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options, 'CONTEXT');
  }
}

/** No workflow of that name is registered with the runner. */
export class WorkflowNotFoundError extends OrreryError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('WORKFLOW_NOT_FOUND', message, options);
  }
}

/** An idempotency key is already used by an execution of another workflow. */
export class IdempotencyConflictError extends OrreryError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('IDEMPOTENCY_CONFLICT', message, options);
  }
}

/** No cron schedule has that id or name. */
export class ScheduleNotFoundError extends OrreryError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SCHEDULE_NOT_FOUND', message, options);
  }
}

/** No pipeline execution has that id. */
export class ExecutionNotFoundError extends OrreryError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('EXECUTION_NOT_FOUND', message, options);
  }
}

/** A schedule name is taken by a schedule with another definition. */
export class ScheduleConflictError extends OrreryError {
  /** The definition fields that differ from the stored schedule's (empty when the conflict is a taken name). */
  readonly fields: string[];

  constructor(message: string, options?: { cause?: unknown; fields?: readonly string[] }) {
    super('SCHEDULE_CONFLICT', message, options);
    this.fields = [...(options?.fields ?? [])];
  }
}

/**
 * A manual trigger of a `skip` schedule found an earlier occurrence still active: it was
 * recorded as a `skipped` manual ledger row and started nothing.
 */
export class ScheduleOverlapError extends OrreryError {
  /**
   * The active pipeline the trigger overlapped; null when the active occurrence has no
   * pipeline yet (it is claimed or buffered).
   */
  readonly activePipelineExecutionId: string | null;

  constructor(message: string, activePipelineExecutionId: string | null, options?: { cause?: unknown }) {
    super('SCHEDULE_OVERLAP', message, options);
    this.activePipelineExecutionId = activePipelineExecutionId;
  }
}

/** `execute()` or `wait()` gave up before the pipeline reached a terminal state. */
export class PipelineTimeoutError extends OrreryError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PIPELINE_TIMEOUT', message, options);
  }
}

/** The runner's configuration is invalid (unknown database URL, bad option, stale schema). */
export class ConfigurationError extends OrreryError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CONFIGURATION', message, options);
  }
}

/** The database refused or failed a statement; the driver's error is kept as `cause`. */
export class DatabaseError extends OrreryError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DATABASE', message, options);
  }
}

/** Thrown by a task to fail at once, without the retries its policy would allow. */
export class NonRetryableError extends OrreryError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('NON_RETRYABLE', message, options);
  }
}

/**
 * A wait task's signal did not arrive within its `timeoutMs`: the task fails with it, never
 * retried, so that a `trigger: 'one_failed'` branch can handle the timeout.
 */
export class SignalTimeoutError extends OrreryError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SIGNAL_TIMEOUT', message, options);
  }
}

/**
 * True when `error` is an Orrery error (optionally of the given `code`). Works across
 * duplicate copies of the package, unlike `instanceof`; driver and system errors, which also
 * carry a string `code`, are not Orrery errors.
 */
export function isOrreryError(error: unknown, code?: string): error is OrreryError {
  if (typeof error !== 'object' || error === null) return false;
  if ((error as { [ORRERY_ERROR]?: unknown })[ORRERY_ERROR] !== true) return false;
  return code === undefined || (error as { code?: unknown }).code === code;
}
