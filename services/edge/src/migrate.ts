import { connect, migrateSchema } from "@gw/db";
import { migrationsFolder } from "./app.ts";
import { readConfig } from "./config.ts";

// Applies the edge's migrations and exits: the Kubernetes migration Job runs this.
const { sql, db } = connect(readConfig().DATABASE_URL, { max: 2, application: "edge-migrate" });
await migrateSchema(sql, db, "edge", migrationsFolder);
await sql.end();
