import { describe, expect, it } from 'vitest';
import { redactDatabaseUrl } from '../src/runner-session.js';

describe('redactDatabaseUrl', () => {
  it('masks the password of a URL and leaves other URLs alone', () => {
    expect(redactDatabaseUrl('postgres://app:s3cr:et@db.internal:5432/orrery')).toBe(
      'postgres://app:***@db.internal:5432/orrery',
    );
    expect(redactDatabaseUrl('postgres://app@db.internal/orrery')).toBe('postgres://app@db.internal/orrery');
    expect(redactDatabaseUrl('sqlite:./orrery.db')).toBe('sqlite:./orrery.db');
  });
});
