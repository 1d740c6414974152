export { openSqliteStorage, SQLITE_DEFAULTS, type SqliteStorageOptions } from './open.js';
