import { createHash } from "node:crypto";
import { createLogger } from "@gw/log";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import type postgres from "postgres";
import type { Database, Sql } from "./connect.ts";
import { type WaitLogger, type WaitPolicy, whenDatabaseAvailable } from "./wait.ts";

/** The schema holding every service's migration journal. */
const JOURNAL_SCHEMA = "drizzle";

/** A 64-bit advisory lock key derived from a name, the same in every process. */
function lockKey(name: string): string {
  return createHash("sha256").update(name).digest().readBigInt64BE(0).toString();
}

/**
 * Applies a service's drizzle migrations to its own schema. drizzle's migrator takes no
 * lock, so every replica (and the Kubernetes migration Job) first takes a session-level
 * advisory lock on a reserved connection; the second one in waits, then finds nothing to
 * do. Each service's journal is its own table in the shared `drizzle` schema, because the
 * first migration of a service creates the service's schema itself.
 *
 * The shared `drizzle` schema is created first under a lock common to all services:
 * `CREATE SCHEMA IF NOT EXISTS` is not safe against itself, and two services starting
 * on a fresh database would otherwise fail one of them on a unique violation.
 *
 * The pool needs at least two connections: one holds the lock while drizzle migrates on
 * another.
 *
 * A database that is not there yet (starting, recovering, restarting, refusing
 * connections) is waited for, with a bounded backoff and a warning per wait.
 *
 * @throws DatabaseUnavailableError when the database stayed unavailable for the whole wait.
 */
export async function migrateSchema(
  sql: Sql,
  db: Database,
  schema: string,
  migrationsFolder: string,
  options: MigrateOptions = {},
): Promise<void> {
  // Every service, migration job and test helper starts here, before anything else uses
  // the pool, so this is the one place that waits for a database still starting: a
  // recovering server (57P03) or a refused connection is not a reason to exit.
  await whenDatabaseAvailable(
    `migrating ${schema}`,
    () => migrateOnce(sql, db, schema, migrationsFolder),
    options.logger ?? createLogger("db"),
    options.wait,
  );
}

/** How migrateSchema waits for its database. */
export interface MigrateOptions {
  /** Where each wait is logged; a logger of its own ("db") by default. */
  logger?: WaitLogger;
  wait?: WaitPolicy;
}

/**
 * One try of migrateSchema. Safe to run again after it failed part way: drizzle applies the
 * pending migrations in one transaction, and the server releases the locks of a session
 * that died.
 */
async function migrateOnce(sql: Sql, db: Database, schema: string, migrationsFolder: string) {
  // A plain query first: postgres.js can lose a reserve() that waits for a connection
  // being reopened after a failed login (it never settles), while a query is always run
  // or failed. Once it succeeded, the connection is open and reserve() takes it at once.
  await sql`select 1`;
  const conn = await sql.reserve();
  try {
    await withSessionLock(conn, lockKey(`migrate:${JOURNAL_SCHEMA}`), async () => {
      // Its own statement, after the lock: a transaction that began before the other
      // service's commit would still see the schema missing and fail the same way.
      await conn`create schema if not exists ${sql(JOURNAL_SCHEMA)}`;
    });
    await withSessionLock(conn, lockKey(`migrate:${schema}`), () =>
      migrate(db, {
        migrationsFolder,
        migrationsSchema: JOURNAL_SCHEMA,
        migrationsTable: `${schema}_migrations`,
      }),
    );
  } finally {
    conn.release();
  }
}

/** Runs `fn` while `conn`'s session holds the advisory lock `key`. */
async function withSessionLock<T>(conn: postgres.ReservedSql, key: string, fn: () => Promise<T>): Promise<T> {
  await conn`select pg_advisory_lock(${key}::bigint)`;
  try {
    return await fn();
  } finally {
    // A failed unlock (the connection died) must not hide the error of `fn`; the
    // server releases a dead session's locks anyway.
    await conn`select pg_advisory_unlock(${key}::bigint)`.catch(() => {});
  }
}
