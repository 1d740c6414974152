import { ContextError } from './errors.js';

/** A value that survives `JSON.stringify` then `JSON.parse` unchanged. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON object: the shape of every context, input and task output. */
export type JsonObject = { [key: string]: Json };

/**
 * Checks that `value` is plain JSON (no undefined, functions, BigInt, NaN, Infinity, Date,
 * Map, class instances, cycles, `__proto__` keys) and returns a deep copy of it.
 * @throws ContextError naming the path of the first offending value.
 */
export function toJson(value: unknown, path: string): Json {
  return copyJson(value, path, new Set());
}

function copyJson(value: unknown, path: string, seen: Set<object>): Json {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return Object.is(value, -0) ? 0 : value;
    return refuse(path, `${value} is not a finite number`);
  }
  if (typeof value !== 'object') return refuse(path, `a ${typeof value} is not JSON`);
  if (seen.has(value)) return refuse(path, 'the value contains a cycle');
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item, i) => copyJson(item, `${path}[${i}]`, seen));
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      return refuse(path, `a ${proto?.constructor?.name ?? 'class'} instance is not plain JSON`);
    }
    const copy: JsonObject = {};
    for (const key of Object.keys(value)) {
      if (key === '__proto__') return refuse(path, 'the key "__proto__" is not allowed');
      const item = (value as Record<string, unknown>)[key];
      copy[key] = copyJson(item, `${path}.${key}`, seen);
    }
    return copy;
  } finally {
    seen.delete(value);
  }
}

function refuse(path: string, why: string): never {
  throw new ContextError(
    `Context value at "${path}" is not JSON: ${why}. Store only strings, finite numbers, booleans, null, arrays and plain objects (convert a Date with toISOString()).`,
  );
}

/** Size in bytes of the UTF-8 JSON serialisation, the measure of `maxContextBytes`. */
export function jsonByteLength(value: Json): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/**
 * Merges `patch` into `base`: plain objects merge recursively; arrays, scalars and null
 * replace. Neither argument is modified.
 */
export function deepMerge(base: JsonObject, patch: JsonObject): JsonObject {
  const merged: JsonObject = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    const current = merged[key];
    merged[key] = isJsonObject(current) && isJsonObject(value) ? deepMerge(current, value) : value;
  }
  return merged;
}

/** True for a JSON object (not an array, not null). */
export function isJsonObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
