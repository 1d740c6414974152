export { openPostgresStorage, POSTGRES_DEFAULTS, type PostgresStorageOptions } from './open.js';
