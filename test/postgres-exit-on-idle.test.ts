/**
 * A Postgres script that never calls close() must still exit once its work is done: the
 * pool's idle connections must not keep the event loop alive until they time out.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName, postgresUrl } from './support/postgres.js';
import { spawnFixture } from './support/processes.js';

const schema = freshSchemaName();

afterAll(() => dropSchema(schema));

describe('a Postgres script that never closes its client', () => {
  it('exits once its work is done, well before the pool idle timeout', async () => {
    const script = spawnFixture('postgres-no-close.ts', [postgresUrl(), schema], {});
    await script.ready;
    // The fixture's idle timeout is 10 minutes; the test's timeout (60 s) fails it unless it exits on idle.
    const { code } = await script.exited;
    expect(code, script.stderr()).toBe(0);
    expect(script.messages).toContainEqual({ ready: true, runners: 0 });
  });
});
