import { createHash } from "node:crypto";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import type { Database, Sql } from "./connect.ts";

/** A 64-bit advisory lock key derived from the schema name, the same in every process. */
function lockKey(schema: string): bigint {
  return createHash("sha256").update(`migrate:${schema}`).digest().readBigInt64BE(0);
}

/**
 * Applies a service's drizzle migrations to its own schema. drizzle's migrator takes no
 * lock, so every replica (and the Kubernetes migration Job) first takes a session-level
 * advisory lock on a reserved connection; the second one in waits, then finds nothing to
 * do. Each service's journal is its own table in the shared `drizzle` schema, because the
 * first migration of a service creates the service's schema itself.
 */
export async function migrateSchema(sql: Sql, db: Database, schema: string, migrationsFolder: string) {
  const key = lockKey(schema);
  const conn = await sql.reserve();
  try {
    await conn`select pg_advisory_lock(${key.toString()}::bigint)`;
    await migrate(db, { migrationsFolder, migrationsSchema: "drizzle", migrationsTable: `${schema}_migrations` });
  } finally {
    await conn`select pg_advisory_unlock(${key.toString()}::bigint)`;
    conn.release();
  }
}
