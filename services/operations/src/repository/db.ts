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

/**
 * Column names as a fragment (`"a", "b"`), for the lists a batched statement builds from
 * the columns its rows write: the names are the repository's own, never a caller's, and
 * anything else is refused.
 */
export function columnList(
  sql: Db,
  columns: readonly string[],
  qualifier?: string,
): postgres.PendingQuery<postgres.Row[]> {
  for (const c of columns) if (!/^[a-z_][a-z0-9_]*$/.test(c)) throw new Error(`not a column name: ${c}`);
  return sql.unsafe(columns.map((c) => (qualifier ? `${qualifier}."${c}"` : `"${c}"`)).join(", "));
}

/** `values`, refusing an undefined one: JSON would drop it and the row would keep its old value. */
export function defined(values: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(values))
    if (v === undefined) throw new Error(`column ${k} is undefined`);
  return values;
}
