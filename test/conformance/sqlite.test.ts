import { openSqliteStorage } from '@orreryjs/sqlite-adapter';
import { tempSqliteFile } from '../support/sqlite.js';
import { describeStorageConformance } from './suite.js';

let latestFile = '';

describeStorageConformance(
  'sqlite',
  async () => {
    const file = tempSqliteFile();
    latestFile = file.filename;
    const storage = await openSqliteStorage({ filename: file.filename });
    return {
      storage,
      close: async () => {
        await storage.close();
        file.remove();
      },
    };
  },
  { concurrentClaims: true, openSecond: () => openSqliteStorage({ filename: latestFile }) },
);
