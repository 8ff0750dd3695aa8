import { connect, migrateSchema } from "@gw/db";
import { readConfig } from "./config.ts";
import { migrationsFolder } from "./server.ts";

// Applies this service's migrations and exits: the Kubernetes migration Job runs this.
const { sql, db } = connect(readConfig().DATABASE_URL, { max: 2, application: "backoffice-migrate" });
await migrateSchema(sql, db, "backoffice", migrationsFolder);
await sql.end();
