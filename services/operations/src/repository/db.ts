import type { Sql } from "@gw/db";
import type postgres from "postgres";

/**
 * A transaction the repository's functions join: callers open it with
 * `OperationStore.transaction` (or get it from an event consumer) and pass it on; only
 * the repository runs statements on it.
 */
export type Tx = postgres.TransactionSql;
/** The connection or a transaction on it. */
export type Db = Sql | Tx;

/** `ms` milliseconds as a Postgres interval, so every time comparison uses the database clock. */
export const millis = (sql: Db, ms: number) => sql`make_interval(secs => ${ms}::double precision / 1000)`;
