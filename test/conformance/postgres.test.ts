import { openPostgresStorage } from '@orreryjs/postgres-adapter';
import { dropSchema, freshSchemaName, postgresUrl } from '../support/postgres.js';
import { describeStorageConformance } from './suite.js';

let latestSchema = '';

describeStorageConformance(
  'postgres',
  async () => {
    const schema = freshSchemaName();
    latestSchema = schema;
    const storage = await openPostgresStorage({ connectionString: postgresUrl(), schema });
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
    openSecond: () => openPostgresStorage({ connectionString: postgresUrl(), schema: latestSchema, migrate: false }),
  },
);
