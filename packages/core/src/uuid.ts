import { parse, stringify, v4, v5, validate } from 'uuid';
import { ValidationError } from './errors.js';

const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Namespace of Orrery's v5 ids (a fixed random v4, never to change: ids derive from it). */
const ORRERY_NAMESPACE = '4f6b7e0a-3c1d-4a5b-9e8f-2d7c6b5a4e3f';

/**
 * A UUID as 16 bytes with a canonical lower-case string form. Postgres stores it as `uuid`,
 * SQLite as a 16-byte BLOB; the public API speaks strings.
 */
export class UniversalUuid {
  readonly #text: string;

  private constructor(text: string) {
    this.#text = text;
  }

  /** A random (v4) id. */
  static v4(): UniversalUuid {
    return new UniversalUuid(v4());
  }

  /** A name-based (v5) id: the same `name` always gives the same id. */
  static v5(name: string): UniversalUuid {
    return new UniversalUuid(v5(name, ORRERY_NAMESPACE));
  }

  /**
   * Parses a UUID string in any case.
   * @throws ValidationError when `text` is not UUID-shaped.
   */
  static parse(text: string): UniversalUuid {
    if (!UniversalUuid.isUuid(text) || !validate(text.toLowerCase())) {
      throw new ValidationError(`"${text}" is not a UUID; ids look like 3f2a8c1e-5b7d-4e9f-8a6c-1d2e3f4a5b6c.`);
    }
    return new UniversalUuid(text.toLowerCase());
  }

  /** Reads the 16-byte binary form. */
  static fromBytes(bytes: Uint8Array): UniversalUuid {
    if (bytes.length !== 16) throw new ValidationError(`A UUID is 16 bytes, got ${bytes.length}.`);
    return new UniversalUuid(stringify(bytes));
  }

  /** True when `text` is shaped like a UUID (any case): such a string is an id, not a name. */
  static isUuid(text: string): boolean {
    return UUID_SHAPE.test(text);
  }

  /** The 16-byte binary form. */
  toBytes(): Uint8Array {
    return parse(this.#text);
  }

  /** True when both denote the same id. */
  equals(other: UniversalUuid): boolean {
    return this.#text === other.#text;
  }

  /** The canonical lower-case string. */
  toString(): string {
    return this.#text;
  }

  /** Serialises as the canonical string. */
  toJSON(): string {
    return this.#text;
  }
}

/** A fresh random id as a canonical string. */
export function newId(): string {
  return v4();
}

/**
 * The first and last UUIDs (canonical strings) whose 32 hex digits start with `hexPrefix`
 * (1 to 32 lower-case hex digits, no dashes): a shortened id is the range between them,
 * which both a 16-byte BLOB and a native `uuid` column compare byte by byte.
 * @throws ValidationError when `hexPrefix` is not 1 to 32 lower-case hex digits.
 */
export function uuidPrefixRange(hexPrefix: string): { first: string; last: string } {
  if (!/^[0-9a-f]{1,32}$/.test(hexPrefix)) {
    throw new ValidationError(
      `An id prefix is 1 to 32 lower-case hex digits without dashes, not ${JSON.stringify(hexPrefix)}.`,
    );
  }
  const dashed = (hex: string) =>
    `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { first: dashed(hexPrefix.padEnd(32, '0')), last: dashed(hexPrefix.padEnd(32, 'f')) };
}

/** The id of the occurrence of `scheduleId` at `scheduledTime`: every instance derives the same. */
export function occurrenceId(scheduleId: string, scheduledTime: Date): string {
  return UniversalUuid.v5(`${scheduleId.toLowerCase()}@${scheduledTime.toISOString()}`).toString();
}
