import { describe, expect, it } from 'vitest';
import { parseDstRules, parseDurationMs, parseInstant, parsePort } from '../src/arguments.js';
import { orreryJson } from './support/cli.js';

describe('parseInstant', () => {
  it('reads a date-time without an offset as UTC, whatever the host zone', () => {
    const previous = process.env.TZ;
    process.env.TZ = 'America/New_York';
    try {
      expect(parseInstant('2026-06-01T09:00').toISOString()).toBe('2026-06-01T09:00:00.000Z');
      expect(parseInstant('2026-06-01 09:00:30').toISOString()).toBe('2026-06-01T09:00:30.000Z');
      expect(parseInstant('2026-06-01').toISOString()).toBe('2026-06-01T00:00:00.000Z');
      expect(parseInstant('2026-06-01T09:00+02:00').toISOString()).toBe('2026-06-01T07:00:00.000Z');
    } finally {
      if (previous === undefined) delete process.env.TZ;
      else process.env.TZ = previous;
    }
  });

  it('refuses what is not an ISO-8601 instant', () => {
    for (const value of ['yesterday', '2026-13-01T09:00', '2026-06-01T9:00']) {
      expect(() => parseInstant(value)).toThrow(/ISO-8601/);
    }
  });
});

describe('parsePort', () => {
  it('accepts 0 to 65535 and refuses the rest, naming the range', () => {
    expect(parsePort('0')).toBe(0);
    expect(parsePort('65535')).toBe(65_535);
    for (const value of ['99999', '-1', '80.5', '']) expect(() => parsePort(value)).toThrow(/0 to 65535/);
  });
});

describe('parseDurationMs', () => {
  it('takes up to 36500 days and refuses longer, naming the limit', () => {
    expect(parseDurationMs('90s')).toBe(90_000);
    expect(parseDurationMs('36500d')).toBe(36_500 * 86_400_000);
    for (const value of ['36501d', '876001h', '99999999999d', `${'9'.repeat(400)}s`]) {
      expect(() => parseDurationMs(value), value).toThrow(/at most 36500d \(100 years\)/);
    }
  });
});

describe('parseDstRules', () => {
  it('reads one or both rules, comma-separated, in any order', () => {
    expect(parseDstRules('repeated=last,gap=skip')).toEqual({ repeated: 'last', gap: 'skip' });
    expect(parseDstRules(' gap=shift , repeated=both ')).toEqual({ repeated: 'both', gap: 'shift' });
    expect(parseDstRules('gap=skip')).toEqual({ gap: 'skip' });
  });

  it('refuses an unknown rule or choice, a repeated rule and a bare choice, listing the choices', () => {
    for (const value of ['repeated=twice', 'gaps=skip', 'last', 'gap=skip=1', '', 'repeated=last,']) {
      expect(() => parseDstRules(value), value).toThrow(/repeated=first\|last\|both and\/or gap=shift\|skip/);
    }
    expect(() => parseDstRules('gap=skip,gap=shift')).toThrow(/gap is given twice/);
    expect(() => parseDstRules('constructor=x')).toThrow(/not "constructor=x"/);
  });
});

describe('orrery next --after without an offset', () => {
  it('reads the instant as UTC in a process whose zone is not UTC', () => {
    const { occurrences } = orreryJson<{ occurrences: Array<{ utc: string }> }>(
      ['next', '0 * * * *', '-n', '1', '--after', '2026-06-01T09:00'],
      { env: { TZ: 'America/New_York' } },
    );
    expect(occurrences).toEqual([expect.objectContaining({ utc: '2026-06-01T10:00:00.000Z' })]);
  });
});
