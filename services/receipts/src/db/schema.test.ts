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
import { REVIEW_STATUSES } from "./schema.ts";

// A review's status is one of REVIEW_STATUSES in the database too: the migrated CHECK
// lists exactly them, and refuses any other value, whoever writes it.

const migrationsFolder = fileURLToPath(new URL("../../drizzle", import.meta.url));

let database: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  database = await createTestDatabase();
  const conn = connect(database.url, { max: 2 });
  sql = conn.sql;
  await migrateSchema(sql, conn.db, "receipts", migrationsFolder);
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

describe("the receipt reviews status CHECK", () => {
  it("lists exactly the review statuses", async () => {
    expect(await checkConstraintValues(sql, "receipts", "receipt_reviews_status")).toEqual([
      ...REVIEW_STATUSES,
    ]);
  });

  it("refuses a status that is not one of them", async () => {
    const insert = (status: string) => sql`
      insert into receipts.receipt_reviews (id, operation_id, shop_id, sha256, size_bytes, content_type,
        status, currency, expected, review_deadline)
      values (${randomUUID()}, ${randomUUID()}, ${randomUUID()}, 'sha', 1, 'application/pdf', ${status},
        'RUB', '{}', now())`;
    await insert("reviewing");
    await expect(insert("pending")).rejects.toMatchObject({
      code: "23514",
      constraint_name: "receipt_reviews_status",
    });
  });
});
