import { describe, expect, it } from 'vitest';
import { checkPage, MAX_PAGE_VALUE, ValidationError } from '../src/index.js';

describe('checkPage', () => {
  it('fills in the listing defaults and keeps given values', () => {
    expect(checkPage({})).toEqual({ limit: MAX_PAGE_VALUE, offset: 0 });
    expect(checkPage({}, { defaultLimit: 100, maxLimit: 1000 })).toEqual({ limit: 100, offset: 0 });
    expect(checkPage({ limit: 1000, offset: MAX_PAGE_VALUE }, { maxLimit: 1000 })).toEqual({
      limit: 1000,
      offset: MAX_PAGE_VALUE,
    });
  });

  it.each([
    [{ limit: 0 }, 'limit must be an integer from 1 to 1000, got 0.'],
    [{ limit: 1001 }, 'limit must be an integer from 1 to 1000, got 1001.'],
    [{ limit: Number.NaN }, 'limit must be an integer from 1 to 1000, got NaN.'],
    [{ limit: '5' }, 'limit must be an integer from 1 to 1000, got "5".'],
    [{ offset: -1 }, 'offset must be an integer from 0 to 9007199254740991 (Number.MAX_SAFE_INTEGER), got -1.'],
    [{ offset: 1e20 }, 'got 100000000000000000000.'],
    [{ offset: 1.5 }, 'got 1.5.'],
    [{ offset: null }, 'got null.'],
  ])('refuses %o with a ValidationError naming it', (page, message) => {
    expect(() => checkPage(page, { maxLimit: 1000 })).toThrow(ValidationError);
    expect(() => checkPage(page, { maxLimit: 1000 })).toThrow(message);
  });
});
