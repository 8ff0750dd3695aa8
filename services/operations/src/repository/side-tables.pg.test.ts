import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { connect, createTestDatabase, migrateSchema, type Sql, type TestDatabase } from "@gw/db";
import { afterAll, beforeAll } from "vitest";
import { describeHandOffs } from "../../test/contracts/handoffs.contract.ts";
import { describeLinks } from "../../test/contracts/links.contract.ts";
import { describeProviderFacts } from "../../test/contracts/provider-facts.contract.ts";
import { describeSideTables } from "../../test/contracts/side-tables.contract.ts";
import { PgOperationStore } from "./operations.ts";

// The side tables' contracts on Postgres (the memory store's: side-tables.memory.unit.test.ts).

const migrationsFolder = fileURLToPath(new URL("../../drizzle", import.meta.url));

let database: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  database = await createTestDatabase();
  const conn = connect(database.url, { max: 4 });
  sql = conn.sql;
  await migrateSchema(sql, conn.db, "operations", migrationsFolder);
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

const make = async () => ({ store: new PgOperationStore(sql, `t${randomUUID().slice(0, 8)}`) });

describeLinks("the Postgres store", make);
describeSideTables("the Postgres store", make);
describeProviderFacts("the Postgres store", make);
describeHandOffs("the Postgres store", make);
