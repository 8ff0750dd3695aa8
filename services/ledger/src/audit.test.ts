import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { Sql } from "@gw/db";
import { Decimal } from "@gw/money";
import {
  ListClearingByOperationRequestSchema,
  ListShopTotalsRequestSchema,
} from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listClearingByOperation, listShopTotals } from "./audit.ts";
import { migratedDatabase } from "./test-support.ts";
import { type AccountRef, credit, debit, postTransfer } from "./transfers.ts";

// The ledger's audit reads on a real database: the sums the conservation checker takes,
// read a page at a time, add up to what was posted however small the pages.

let database: Awaited<ReturnType<typeof migratedDatabase>>;
let sql: Sql;
const shops = [randomUUID(), randomUUID(), randomUUID()].sort();
const operations: { id: string; shop: string; amount: string }[] = [];

const ref = (owner: string, kind: AccountRef["kind"]): AccountRef => ({ owner, currency: "RUB", kind });

beforeAll(async () => {
  database = await migratedDatabase();
  sql = database.sql;
  // Per shop: payments settled (clearing debited), and one payout completed (credited) twice
  // under two keys for the last shop, which the checker must see as payout_completes 2.
  for (const [i, shop] of shops.entries()) {
    for (let n = 0; n < 4; n++) {
      const id = randomUUID();
      const amount = `${100 + 10 * i + n}.25`;
      operations.push({ id, shop, amount });
      await sql.begin((tx) =>
        postTransfer(tx, {
          key: `op:${id}:settle`,
          kind: "payment_settle",
          shopId: shop,
          operationId: id,
          postings: [
            debit(ref(shop, "provider_clearing"), new Decimal(amount)),
            credit(ref(shop, "available"), new Decimal(amount)),
          ],
        }),
      );
    }
  }
  const payout = randomUUID();
  const shop = shops[2] ?? "";
  for (const key of ["a", "b"])
    await sql.begin((tx) =>
      postTransfer(tx, {
        key: `op:${payout}:complete:${key}`,
        kind: "payout_complete",
        shopId: shop,
        operationId: payout,
        postings: [
          debit(ref(shop, "available"), new Decimal("40.00")),
          credit(ref(shop, "provider_clearing"), new Decimal("40.00")),
        ],
      }),
    );
  operations.push({ id: payout, shop, amount: "-80.00" });
});
afterAll(() => database?.close());

async function allPages<T>(read: (cursor: string) => Promise<{ rows: T[]; nextCursor: string }>) {
  const rows: T[] = [];
  let cursor = "";
  let pages = 0;
  do {
    const page = await read(cursor);
    rows.push(...page.rows);
    cursor = page.nextCursor;
    pages++;
  } while (cursor !== "");
  return { rows, pages };
}

describe("ledger audit reads", () => {
  it("lists provider clearing per operation over keyset pages, each operation once, the sums as posted", async () => {
    const { rows, pages } = await allPages(async (cursor) => {
      const res = await listClearingByOperation(
        sql,
        create(ListClearingByOperationRequestSchema, { cursor, limit: 5 }),
      );
      return { rows: res.operations, nextCursor: res.nextCursor };
    });
    expect(pages).toBeGreaterThan(2);
    expect(rows.map((r) => r.operationId)).toEqual(operations.map((o) => o.id).sort());
    for (const o of operations) {
      const row = rows.find((r) => r.operationId === o.id);
      expect(new Decimal(row?.booked ?? "x").eq(o.amount), o.id).toBe(true);
      expect(row?.shopId).toBe(o.shop);
      expect(row?.currency).toBe("RUB");
    }
    expect(rows.filter((r) => r.payoutCompletes > 1).map((r) => r.payoutCompletes)).toEqual([2]);
  });

  it("lists per shop and currency the clearing total and an accounts' sum of zero, over keyset pages", async () => {
    const { rows, pages } = await allPages(async (cursor) => {
      const res = await listShopTotals(sql, create(ListShopTotalsRequestSchema, { cursor, limit: 1 }));
      return { rows: res.totals, nextCursor: res.nextCursor };
    });
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(rows.map((r) => r.shopId)).toEqual(shops);
    for (const t of rows) {
      const posted = operations
        .filter((o) => o.shop === t.shopId)
        .reduce((sum, o) => sum.plus(o.amount), new Decimal(0));
      expect(new Decimal(t.providerClearing).eq(posted), t.shopId).toBe(true);
      expect(new Decimal(t.accountsSum).isZero()).toBe(true);
    }
  });

  it("refuses a cursor no page gave", async () => {
    await expect(
      listClearingByOperation(sql, create(ListClearingByOperationRequestSchema, { cursor: "nope" })),
    ).rejects.toThrow(/cursor/);
    await expect(
      listShopTotals(sql, create(ListShopTotalsRequestSchema, { cursor: "bm9wZQ" })),
    ).rejects.toThrow(/cursor/);
  });
});
