import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { connect, createTestDatabase, migrateSchema, type Sql, type TestDatabase } from "@gw/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DELIVERY_STATUSES } from "./schema.ts";

// A delivery's status is one of DELIVERY_STATUSES in the database too: the migrated CHECK
// lists exactly them, and refuses any other value, whoever writes it.

const migrationsFolder = fileURLToPath(new URL("../../drizzle", import.meta.url));

let database: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  database = await createTestDatabase();
  const conn = connect(database.url, { max: 2 });
  sql = conn.sql;
  await migrateSchema(sql, conn.db, "webhooks", migrationsFolder);
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

describe("the deliveries status CHECK", () => {
  it("lists exactly the delivery statuses", async () => {
    const [row] = await sql<{ def: string }[]>`
      select pg_get_constraintdef(c.oid) as def from pg_constraint c
      join pg_namespace n on n.oid = c.connamespace
      where n.nspname = 'webhooks' and c.conname = 'deliveries_status' and c.contype = 'c'`;
    expect([...(row?.def ?? "").matchAll(/'([a-z_]+)'/g)].map((m) => m[1])).toEqual([...DELIVERY_STATUSES]);
  });

  it("refuses a status that is not one of them", async () => {
    const insert = (status: string) => sql`
      insert into webhooks.deliveries (event_id, shop_id, operation_id, operation_version, event_type,
        occurred_at, payload, status)
      values (${randomUUID()}, ${randomUUID()}, ${randomUUID()}, 1, 'payment.completed', now(), '{}', ${status})`;
    await insert("pending");
    await expect(insert("dead")).rejects.toMatchObject({
      code: "23514",
      constraint_name: "deliveries_status",
    });
  });
});
