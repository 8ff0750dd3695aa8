import { drizzle, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import postgres from "postgres";

export type Sql = postgres.Sql;
export type Database = PostgresJsDatabase<Record<string, never>>;

/**
 * Opens a connection pool. `numeric` columns come back as strings (postgres.js default)
 * and are only ever read into Decimal, never into a JS number.
 *
 * drizzle takes over the client's timestamp and json conversions: through `sql`, too,
 * timestamps come back as Postgres text and must be sent as ISO strings, and json values
 * must be sent already stringified.
 */
export function connect(
  url: string,
  options: { max?: number; application?: string; debug?: postgres.Options<never>["debug"] } = {},
) {
  const sql = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connection: { application_name: options.application ?? "gateway" },
    // Sees every statement sent: how tests and benches count round trips.
    ...(options.debug ? { debug: options.debug } : {}),
  });
  const db: Database = drizzle(sql);
  return { sql, db };
}
