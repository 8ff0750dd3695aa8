import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { connect, createTestDatabase, migrateSchema, type Sql, type TestDatabase } from "@gw/db";
import { afterAll, beforeAll } from "vitest";
import { describeHandOffs } from "../../test/contracts/handoffs.contract.ts";
import { describeProviderFacts } from "../../test/contracts/provider-facts.contract.ts";
import { PgOperationStore } from "./operations.ts";

// The side tables' contracts on Postgres (the memory store's: side-tables.memory.unit.test.ts).

const migrationsFolder = fileURLToPath(new URL("../../drizzle", import.meta.url));

let database: TestDatabase;
let sql: Sql;
let store: PgOperationStore;

beforeAll(async () => {
  database = await createTestDatabase();
  const conn = connect(database.url, { max: 4 });
  sql = conn.sql;
  await migrateSchema(sql, conn.db, "operations", migrationsFolder);
  store = new PgOperationStore(sql, `t${randomUUID().slice(0, 8)}`);
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

describeProviderFacts("the Postgres store", async () => ({ store }));
describeHandOffs("the Postgres store", async () => ({ store }));
