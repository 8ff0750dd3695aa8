export { connect, type Database, type Sql } from "./connect.ts";
export { migrateSchema } from "./migrate.ts";
export { outboxTable, inboxTable } from "./tables.ts";
export { createTestDatabase, type TestDatabase } from "./test-database.ts";
export { isUniqueViolation, isSerializationFailure, withRetry } from "./errors.ts";
