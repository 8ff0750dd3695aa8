export { connect, type Database, type Sql } from "./connect.ts";
export { isSerializationFailure, isUniqueViolation, withRetry } from "./errors.ts";
export { type CutKind, type FaultProxy, type ProxyMode, startFaultProxy } from "./fault-proxy.ts";
export { type MigrateOptions, migrateSchema } from "./migrate.ts";
export {
  DEAD_LETTER_KEEP_MS,
  INBOX_KEEP_MS,
  inboxRetention,
  prune,
  RETENTION_BATCH,
  RetentionJob,
  type RetentionRule,
  resolvedDeadLetterRetention,
} from "./retention.ts";
export { deadLetterTable, inboxTable, outboxTable } from "./tables.ts";
export { checkConstraintValues, createTestDatabase, type TestDatabase } from "./test-database.ts";
export {
  DatabaseUnavailableError,
  DEFAULT_WAIT,
  isDatabaseUnavailable,
  type WaitLogger,
  type WaitPolicy,
  whenDatabaseAvailable,
} from "./wait.ts";
