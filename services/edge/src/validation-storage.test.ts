import { randomUUID } from "node:crypto";
import { connect, createTestDatabase, migrateSchema, type Sql, type TestDatabase } from "@gw/db";
import { migrationsFolder } from "@gw/operations";
import { type OperationStore, PgOperationStore } from "@gw/operations/repository";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cancelOperationBody, createOperationBody, operationRefBody } from "./validation.ts";

// Issue 27 item 3: whatever the edge's validators let through can be stored. Arbitrary
// strings (any code unit, lone surrogates, NUL and control characters, up to 3,000
// characters) go into the identifier and text fields; every body that passes validation
// is written into the real operations table (its text columns and the unique index on
// (shop_id, merchant_operation_id)) and read back by its key.

let database: TestDatabase;
let sql: Sql;
let store: OperationStore;
beforeAll(async () => {
  database = await createTestDatabase();
  const conn = connect(database.url, { max: 3 });
  sql = conn.sql;
  await migrateSchema(sql, conn.db, "operations", migrationsFolder);
  store = new PgOperationStore(sql, `t${randomUUID().slice(0, 8)}`);
});
afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

/** Any UTF-16 code unit, lone surrogate halves and NUL included. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));
const anyText = fc.oneof(
  fc.string({ unit: codeUnit, maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 300 }),
  fc.string({ unit: "binary", minLength: 200, maxLength: 3_000 }),
  fc.string({ unit: "grapheme-ascii", minLength: 250, maxLength: 3_000 }),
);

const SHOP = randomUUID();

describe("the edge's validators and the operations table", () => {
  it("stores every create body that passes validation, and finds it by its key", async () => {
    await fc.assert(
      fc.asyncProperty(
        anyText,
        anyText,
        anyText,
        anyText,
        anyText,
        async (mop, clientId, number, name, bankname) => {
          const parsed = createOperationBody.safeParse({
            merchant_operation_id: mop,
            client_id: clientId,
            method: "WT_RUB_C2C",
            amount: "100.00",
            currency: "RUB",
            number,
            name,
            bankname,
          });
          if (!parsed.success) return;
          const body = parsed.data;
          await store.insert({
            id: randomUUID(),
            shop_id: SHOP,
            merchant_id: SHOP,
            merchant_operation_id: body.merchant_operation_id,
            type: "payout",
            status: "routing",
            client_id: body.client_id,
            number: body.number ?? null,
            name: body.name ?? null,
            bankname: body.bankname ?? null,
          });
          const found = await store.findByMop(SHOP, body.merchant_operation_id);
          expect(found?.merchant_operation_id).toBe(body.merchant_operation_id);
          expect(found?.client_id).toBe(body.client_id);
          expect(found?.name).toBe(body.name ?? null);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("stores every cancel placeholder whose body passes validation, and looks up every valid key", async () => {
    await fc.assert(
      fc.asyncProperty(anyText, anyText, async (mop, reason) => {
        const parsed = cancelOperationBody.safeParse({ merchant_operation_id: mop, reason });
        if (!parsed.success) return;
        const key = parsed.data.merchant_operation_id ?? "";
        expect(operationRefBody.safeParse({ merchant_operation_id: key }).success).toBe(true);
        await store.findByMop(SHOP, key);
        await store.insert({
          id: randomUUID(),
          shop_id: SHOP,
          merchant_id: "00000000-0000-0000-0000-000000000000",
          merchant_operation_id: key,
          type: "payment",
          status: "cancelled",
          cancel_requested: true,
          cancelled_by_command: true,
          cancel_reason: parsed.data.reason || "cancel",
        });
      }),
      { numRuns: 300 },
    );
  });

  it("lets through values of every kind it refuses nothing storable for: ordinary keys, Unicode names, a 255-character key", () => {
    const ok = createOperationBody.safeParse({
      merchant_operation_id: "é".repeat(255),
      client_id: "user-42",
      method: "WT_RUB_C2C",
      amount: "100.00",
      currency: "RUB",
      name: "Иван Иванович\nИванов 🙂",
    });
    expect(ok.success).toBe(true);
  });
});
