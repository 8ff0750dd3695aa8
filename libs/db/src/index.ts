export { connect, type Database, type Sql } from "./connect.ts";
export { isSerializationFailure, isUniqueViolation, withRetry } from "./errors.ts";
export { migrateSchema } from "./migrate.ts";
export { deadLetterTable, inboxTable, outboxTable } from "./tables.ts";
export { createTestDatabase, type TestDatabase } from "./test-database.ts";
