import { openSqliteStorage } from '@orreryjs/sqlite-adapter';
import { tempSqliteStorage } from '../support/sqlite.js';
import { describeStorageConformance } from './suite.js';

let latestFile = '';

describeStorageConformance(
  'sqlite',
  async () => {
    const { storage, filename, remove } = await tempSqliteStorage();
    latestFile = filename;
    return { storage, close: remove };
  },
  { concurrentClaims: true, openSecond: () => openSqliteStorage({ filename: latestFile }) },
);
