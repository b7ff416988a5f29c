export { startPostgres, getFreePort, POSTGRES_USER, POSTGRES_PASSWORD } from './postgres.ts';
export { startTempPostgres, TEMP_BASE_ENV } from './temp-server.ts';
export type { PostgresServer, StartPostgresOptions } from './postgres.ts';
export { getTestPostgres, createTestDatabase, dropDatabase, PROVIDE_KEY, URL_ENV } from './test-database.ts';
export type { TestPostgres, TestDatabase, CreateTestDatabaseOptions } from './test-database.ts';
export { applyMigrations, loadMigrations, MIGRATIONS_TABLE } from './migrations.ts';
export type { Migration, MigrationSource } from './migrations.ts';
export { quoteIdent, withDatabase } from './sql.ts';
