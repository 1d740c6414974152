import { ContextError } from './errors.js';
import { deepMerge, type Json, type JsonObject, jsonByteLength, toJson } from './json.js';

/** The default cap on a serialised context, in bytes (1 MiB). */
export const DEFAULT_MAX_CONTEXT_BYTES = 1_048_576;

/**
 * What a task changed in its context during one attempt: keys set and keys deleted. The
 * output of a successful attempt; a failed attempt's delta is discarded.
 */
export interface ContextDelta {
  set: JsonObject;
  deleted: string[];
}

// Assigned in Context's static block: the runner reads a task's delta, and makes a context
// read-only, without widening the API.
let readDelta: (context: Context) => ContextDelta;
let makeReadOnly: (context: Context, reason: string) => Context;

/**
 * The data that flows through a pipeline. Values must be plain JSON so that every write
 * can be stored and read back unchanged by any runner.
 */
export class Context {
  #data: Map<string, Json>;
  #delta: { set: Map<string, Json>; deleted: Set<string> } = { set: new Map(), deleted: new Set() };
  /** Why writes are refused (the message of their ContextError); null while writable. */
  #readOnly: string | null = null;

  /** @throws ContextError when `data` holds a value that is not plain JSON. */
  constructor(data: Record<string, Json> = {}) {
    this.#data = new Map();
    for (const [key, value] of Object.entries(toJson(data, 'context') as JsonObject)) {
      this.#data.set(key, value);
    }
  }

  /** The value stored under `key`, or undefined. The caller gets a copy it may mutate. */
  get<T extends Json = Json>(key: string): T | undefined {
    const value = this.#data.get(key);
    return value === undefined ? undefined : (structuredClone(value) as T);
  }

  /**
   * Stores a copy of `value` under `key`.
   * @throws ContextError unless the value survives a JSON round trip unchanged.
   */
  set(key: string, value: Json): this {
    if (this.#readOnly !== null) throw new ContextError(this.#readOnly);
    if (key === '__proto__') throw new ContextError('Context key "__proto__" is not allowed; choose another key.');
    const copy = toJson(value, key);
    this.#data.set(key, copy);
    this.#delta.set.set(key, copy);
    this.#delta.deleted.delete(key);
    return this;
  }

  /** True when `key` holds a value. */
  has(key: string): boolean {
    return this.#data.has(key);
  }

  /** Removes `key`; true when it was present. */
  delete(key: string): boolean {
    if (this.#readOnly !== null) throw new ContextError(this.#readOnly);
    this.#delta.set.delete(key);
    this.#delta.deleted.add(key);
    return this.#data.delete(key);
  }

  /** Every key, in insertion order. */
  keys(): string[] {
    return [...this.#data.keys()];
  }

  /** A plain-object copy of the data. */
  toJSON(): Record<string, Json> {
    return Object.fromEntries(this.#data) as Record<string, Json>;
  }

  static {
    readDelta = (context) => ({
      set: Object.fromEntries(context.#delta.set) as JsonObject,
      deleted: [...context.#delta.deleted],
    });
    makeReadOnly = (context, reason) => {
      context.#readOnly = reason;
      return context;
    };
  }
}

/** The keys set and deleted on `context` since it was built. Internal to the runner. */
export function contextDelta(context: Context): ContextDelta {
  return readDelta(context);
}

/**
 * Makes `context` read-only: `set` and `delete` then throw ContextError with `reason` (an
 * instance of a map task reads the context; its return value is its result). Internal to the runner.
 */
export function readOnlyContext(context: Context, reason: string): Context {
  return makeReadOnly(context, reason);
}

/**
 * Refuses a context whose JSON form is larger than `maxBytes`.
 * @throws ContextError naming what was too large and the limit.
 */
export function assertContextSize(data: JsonObject, maxBytes: number, what: string): void {
  const size = jsonByteLength(data);
  if (size > maxBytes) {
    throw new ContextError(
      `${what} is ${size} bytes serialised, over the limit of ${maxBytes} (maxContextBytes); keep large payloads elsewhere and pass a reference.`,
    );
  }
}

/** Builds the context a task sees: the input merged with its ancestors' outputs, in order. */
export function mergeContext(input: JsonObject, outputs: Iterable<ContextDelta>): JsonObject {
  let merged = input;
  for (const output of outputs) {
    merged = deepMerge(merged, output.set);
    if (output.deleted.length > 0) {
      merged = { ...merged };
      for (const key of output.deleted) delete merged[key];
    }
  }
  return merged;
}
