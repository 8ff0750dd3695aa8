import { connect, migrateSchema } from "@gw/db";
import { migrationsFolder } from "./app.ts";
import { readConfig } from "./config.ts";

// Applies this service's migrations and exits: the Kubernetes migration Job runs this.
// Two connections: migrateSchema holds its advisory lock on one while drizzle migrates on another.
const { sql, db } = connect(readConfig().DATABASE_URL, { max: 2, application: "receipts-migrate" });
await migrateSchema(sql, db, "receipts", migrationsFolder);
await sql.end();
