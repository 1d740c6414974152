import { openPostgresStorage } from '@orreryjs/postgres-adapter';
import { dropSchema, freshSchemaName, pgbouncerUrl } from '../support/postgres.js';
import { describeStorageConformance } from './suite.js';

// The Postgres conformance suite through PgBouncer 1.18 in pool_mode = transaction: each
// transaction may run on another server connection, so nothing may rest on session state.
let latestSchema = '';

describeStorageConformance(
  'postgres through pgbouncer (transaction mode)',
  async () => {
    const schema = freshSchemaName();
    latestSchema = schema;
    const storage = await openPostgresStorage({ connectionString: pgbouncerUrl(), schema, preparedStatements: false });
    return {
      storage,
      close: async () => {
        await storage.close();
        await dropSchema(schema);
      },
    };
  },
  {
    concurrentClaims: true,
    openSecond: () =>
      openPostgresStorage({
        connectionString: pgbouncerUrl(),
        schema: latestSchema,
        migrate: false,
        preparedStatements: false,
      }),
  },
);
