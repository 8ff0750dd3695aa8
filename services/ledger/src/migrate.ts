import { connect, migrateSchema } from "@gw/db";
import { migrationsFolder } from "./app.ts";
import { readConfig } from "./config.ts";

// Applies this service's migrations and exits: the Kubernetes migration Job runs this.
const { sql, db } = connect(readConfig().DATABASE_URL, { max: 2, application: "ledger-migrate" });
await migrateSchema(sql, db, "ledger", migrationsFolder);
await sql.end();
