import { connect, createTestDatabase, migrateSchema, type Sql } from "@gw/db";
import { createLogger } from "@gw/log";
import { migrationsFolder } from "./app.ts";

/** A fresh, migrated database for one test file; `close()` ends the pool and drops it. */
export async function migratedDatabase(): Promise<{ url: string; sql: Sql; close(): Promise<void> }> {
  const database = await createTestDatabase();
  const { sql, db } = connect(database.url, { max: 4, application: "ledger-test" });
  await migrateSchema(sql, db, "ledger", migrationsFolder);
  return {
    url: database.url,
    sql,
    async close() {
      await sql.end();
      await database.drop();
    },
  };
}

/** A logger that prints nothing, for handlers under test. */
export const silentLogger = createLogger("ledger-test", "silent");
