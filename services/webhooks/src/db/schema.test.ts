import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import {
  checkConstraintValues,
  connect,
  createTestDatabase,
  migrateSchema,
  type Sql,
  type TestDatabase,
} from "@gw/db";
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
    expect(await checkConstraintValues(sql, "webhooks", "deliveries_status")).toEqual([...DELIVERY_STATUSES]);
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
