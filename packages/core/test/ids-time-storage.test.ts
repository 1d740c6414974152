import { describe, expect, it } from 'vitest';
import {
  assertStorableDate,
  ConfigurationError,
  isOrreryError,
  MAX_STORABLE_DATE,
  MIN_STORABLE_DATE,
  occurrenceId,
  parseDatabaseUrl,
  ScheduleNotFoundError,
  truncateToMillis,
  UniversalTimestamp,
  UniversalUuid,
  ValidationError,
  validateSchemaName,
} from '../src/index.js';

describe('UniversalUuid', () => {
  it('round-trips through 16 bytes and canonicalises case', () => {
    const id = UniversalUuid.parse('3F2A8C1E-5B7D-4E9F-8A6C-1D2E3F4A5B6C');
    expect(id.toString()).toBe('3f2a8c1e-5b7d-4e9f-8a6c-1d2e3f4a5b6c');
    expect(id.toBytes()).toHaveLength(16);
    expect(UniversalUuid.fromBytes(id.toBytes()).equals(id)).toBe(true);
    expect(UniversalUuid.v4().toString()).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('derives the same v5 occurrence id for the same schedule and time, whatever the case', () => {
    const at = new Date('2026-03-08T07:30:00Z');
    const a = occurrenceId('3F2A8C1E-5B7D-4E9F-8A6C-1D2E3F4A5B6C', at);
    expect(a).toBe(occurrenceId('3f2a8c1e-5b7d-4e9f-8a6c-1d2e3f4a5b6c', new Date(at)));
    expect(a).not.toBe(occurrenceId('3f2a8c1e-5b7d-4e9f-8a6c-1d2e3f4a5b6c', new Date(at.getTime() + 1000)));
    expect(a[14]).toBe('5');
  });

  it('refuses a string that is not a UUID', () => {
    expect(() => UniversalUuid.parse('nightly-report')).toThrow(ValidationError);
    expect(() => UniversalUuid.parse('nightly-report')).toThrow('"nightly-report" is not a UUID');
    expect(UniversalUuid.isUuid('nightly-report')).toBe(false);
  });
});

describe('UniversalTimestamp', () => {
  it('truncates to milliseconds and refuses invalid dates', () => {
    expect(UniversalTimestamp.fromMillis(1.9).epochMs).toBe(1);
    expect(truncateToMillis(new Date(1234)).getTime()).toBe(1234);
    expect(UniversalTimestamp.fromDate(new Date('2026-01-01T00:00:00.123Z')).toISOString()).toBe(
      '2026-01-01T00:00:00.123Z',
    );
    expect(() => UniversalTimestamp.fromDate(new Date('nope'))).toThrow(ValidationError);
  });

  it('refuses instants outside the years 1 to 9999 that every adapter stores, naming the value', () => {
    expect(UniversalTimestamp.fromDate(MAX_STORABLE_DATE).toISOString()).toBe('9999-12-31T23:59:59.999Z');
    expect(UniversalTimestamp.fromDate(MIN_STORABLE_DATE).toISOString()).toBe('0001-01-01T00:00:00.000Z');
    expect(() => UniversalTimestamp.fromMillis(MAX_STORABLE_DATE.getTime() + 1)).toThrow(ValidationError);
    expect(() => UniversalTimestamp.fromDate(new Date('+010000-01-01T00:00:00Z'))).toThrow(
      /\+010000-01-01T00:00:00\.000Z is outside the instants Orrery can store/,
    );
    expect(() => truncateToMillis(new Date(MIN_STORABLE_DATE.getTime() - 1))).toThrow(ValidationError);
    expect(() => assertStorableDate(new Date('+020000-01-01T00:00:00Z'), 'endAt')).toThrow(/^endAt \+020000/);
  });
});

describe('parseDatabaseUrl', () => {
  it('accepts sqlite files, memory and postgres URLs', () => {
    expect(parseDatabaseUrl('sqlite:./orrery.db')).toEqual({ kind: 'sqlite', filename: './orrery.db' });
    expect(parseDatabaseUrl('sqlite::memory:')).toEqual({ kind: 'sqlite', filename: ':memory:' });
    expect(parseDatabaseUrl('sqlite:///var/lib/orrery.db')).toEqual({ kind: 'sqlite', filename: '/var/lib/orrery.db' });
    expect(parseDatabaseUrl('postgres://u@h/db')).toEqual({ kind: 'postgres', connectionString: 'postgres://u@h/db' });
    expect(parseDatabaseUrl('postgresql://u@h/db').kind).toBe('postgres');
  });

  it('refuses an unknown scheme with a ConfigurationError listing the accepted forms', () => {
    expect(() => parseDatabaseUrl('mysql://root@localhost/db')).toThrow(ConfigurationError);
    expect(() => parseDatabaseUrl('mysql://root@localhost/db')).toThrow(
      /Database URL "mysql:\/\/root@localhost\/db" has an unknown scheme; use 'sqlite:.*'sqlite::memory:'.*'postgres:\/\//,
    );
    expect(() => parseDatabaseUrl('')).toThrow('Database URL is empty');
    expect(() => parseDatabaseUrl('sqlite:')).toThrow('names no file');
  });
});

describe('validateSchemaName', () => {
  it.each(['tenant_a', '_x1', 'a'.repeat(56)])('accepts %s', (name) => {
    expect(validateSchemaName(name)).toBe(name);
  });

  it.each([
    'Tenant',
    '1abc',
    'a-b',
    'x"; drop table y; --',
    'pg_catalog',
    'pg_toast',
    'pg_temp_3',
    'information_schema',
    '',
    'a'.repeat(57),
    'a'.repeat(64),
  ])('refuses %j with a ConfigurationError', (name) => {
    expect(() => validateSchemaName(name)).toThrow(ConfigurationError);
    expect(() => validateSchemaName(name)).toThrow(`Schema name ${JSON.stringify(name)} is invalid`);
  });

  it('says a name over 56 characters would not fit its wake-up channel', () => {
    expect(() => validateSchemaName('a'.repeat(57))).toThrow(
      /57 characters, over the limit of 56: its wake-up channel "orrery.<schema>" must fit PostgreSQL's 63-byte identifiers/,
    );
  });

  it('says a system schema is one, and what to use instead', () => {
    expect(() => validateSchemaName('information_schema')).toThrow(/PostgreSQL system schema.*schema of its own/);
  });
});

describe('isOrreryError', () => {
  it('matches by code, not only by class', () => {
    const err = new ScheduleNotFoundError('x');
    expect(isOrreryError(err)).toBe(true);
    expect(isOrreryError(err, 'SCHEDULE_NOT_FOUND')).toBe(true);
    expect(isOrreryError(err, 'DATABASE')).toBe(false);
    // An error of another copy of the package: same brand, another class.
    const fromAnotherCopy = Object.assign(new Error('x'), {
      code: 'SCHEDULE_NOT_FOUND',
      [Symbol.for('orrery.error')]: true,
    });
    expect(isOrreryError(fromAnotherCopy, 'SCHEDULE_NOT_FOUND')).toBe(true);
    expect(isOrreryError(new Error('x'))).toBe(false);
    // Driver and system errors have a string code too: they are not Orrery errors.
    expect(isOrreryError(Object.assign(new Error('locked'), { code: 'SQLITE_BUSY', name: 'SqliteError' }))).toBe(false);
    expect(isOrreryError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(isOrreryError({ code: 'SCHEDULE_NOT_FOUND', name: 'ScheduleNotFoundError' })).toBe(false);
    expect(err.code).toBe('SCHEDULE_NOT_FOUND');
    expect(err.name).toBe('ScheduleNotFoundError');
  });
});
