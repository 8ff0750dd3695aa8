import { randomUUID } from "node:crypto";
import { type Sql, withRetry } from "@gw/db";
import { CURRENCIES, type Currency, Decimal } from "@gw/money";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migratedDatabase } from "./test-support.ts";
import {
  ACCOUNT_KINDS,
  type AccountRef,
  credit,
  debit,
  type Posting,
  postTransfer,
  UnbalancedTransferError,
} from "./transfers.ts";

let database: Awaited<ReturnType<typeof migratedDatabase>>;
let sql: Sql;

beforeAll(async () => {
  database = await migratedDatabase();
  sql = database.sql;
});
afterAll(() => database.close());

const rub = (owner: string, kind: AccountRef["kind"]): AccountRef => ({ owner, currency: "RUB", kind });

async function balance(ref: AccountRef): Promise<string | undefined> {
  const [row] = await sql<{ balance: string }[]>`
    select balance::text as balance from ledger.accounts
    where owner = ${ref.owner} and currency = ${ref.currency} and kind = ${ref.kind}`;
  return row?.balance;
}

/** Every transfer whose debits and credits differ in some currency; must always be empty. */
const unbalancedTransfers = () => sql`
  select transfer_id, currency from ledger.postings group by transfer_id, currency
  having sum(case when side = 'credit' then amount else -amount end) <> 0`;

/** Every account whose stored balance differs from the sum of its postings; must always be empty. */
const driftedAccounts = () => sql`
  select a.id from ledger.accounts a
  left join ledger.postings p on p.account_id = a.id
  group by a.id, a.balance
  having a.balance <> coalesce(sum(case when p.side = 'credit' then p.amount else -p.amount end), 0)`;

describe("postTransfer", () => {
  it("moves every account it touches by exactly its postings", async () => {
    const shop = randomUUID();
    await sql.begin((tx) =>
      postTransfer(tx, {
        key: `t:${randomUUID()}`,
        kind: "test",
        shopId: shop,
        postings: [
          debit(rub(shop, "provider_clearing"), new Decimal("100.00")),
          credit(rub(shop, "available"), new Decimal("97.50")),
          credit(rub(shop, "commission_revenue"), new Decimal("2.50")),
        ],
      }),
    );
    expect(await balance(rub(shop, "provider_clearing"))).toBe("-100.00");
    expect(await balance(rub(shop, "available"))).toBe("97.50");
    expect(await balance(rub(shop, "commission_revenue"))).toBe("2.50");
  });

  it("posts a key once however often it is posted", async () => {
    const shop = randomUUID();
    const key = `t:${randomUUID()}`;
    const post = () =>
      sql.begin((tx) =>
        postTransfer(tx, {
          key,
          kind: "test",
          shopId: shop,
          postings: [
            debit(rub(shop, "adjustments"), new Decimal("5")),
            credit(rub(shop, "available"), new Decimal("5")),
          ],
        }),
      );
    const first = await post();
    const second = await post();
    expect(first.created).toBe(true);
    expect(second).toMatchObject({ id: first.id, created: false });
    expect(await balance(rub(shop, "available"))).toBe("5.00");
  });

  it("refuses a transfer that does not balance in one of its currencies and writes nothing", async () => {
    const shop = randomUUID();
    const key = `t:${randomUUID()}`;
    const attempt = sql.begin((tx) =>
      postTransfer(tx, {
        key,
        kind: "test",
        shopId: shop,
        postings: [
          debit(rub(shop, "adjustments"), new Decimal("5")),
          credit({ owner: shop, currency: "USDT", kind: "available" }, new Decimal("5")),
        ],
      }),
    );
    await expect(attempt).rejects.toBeInstanceOf(UnbalancedTransferError);
    expect(await sql`select 1 from ledger.transfers where key = ${key}`).toHaveLength(0);
  });

  it("refuses an amount finer than its currency's scale", async () => {
    const shop = randomUUID();
    const attempt = sql.begin((tx) =>
      postTransfer(tx, {
        key: `t:${randomUUID()}`,
        kind: "test",
        shopId: shop,
        postings: [
          debit(rub(shop, "adjustments"), new Decimal("0.001")),
          credit(rub(shop, "available"), new Decimal("0.001")),
        ],
      }),
    );
    await expect(attempt).rejects.toThrow(/finer than RUB/);
  });

  it("has the database refuse at commit a transfer that does not balance, whatever code wrote it", async () => {
    const shop = randomUUID();
    const attempt = sql.begin(async (tx) => {
      const [account] = await tx<{ id: string }[]>`
        insert into ledger.accounts (owner, currency, kind) values (${shop}, 'RUB', 'available') returning id`;
      const [transfer] = await tx<{ id: string }[]>`
        insert into ledger.transfers (key, kind, shop_id) values (${`raw:${shop}`}, 'raw', ${shop}) returning id`;
      await tx`insert into ledger.postings (transfer_id, account_id, currency, side, amount)
               values (${transfer!.id}, ${account!.id}, 'RUB', 'credit', 10)`;
    });
    await expect(attempt).rejects.toMatchObject({ code: "23514" });
    expect(await sql`select 1 from ledger.accounts where owner = ${shop}`).toHaveLength(0);
  });

  it("keeps postings append-only", async () => {
    const shop = randomUUID();
    await sql.begin((tx) =>
      postTransfer(tx, {
        key: `t:${randomUUID()}`,
        kind: "test",
        shopId: shop,
        postings: [
          debit(rub(shop, "adjustments"), new Decimal("1")),
          credit(rub(shop, "available"), new Decimal("1")),
        ],
      }),
    );
    await expect(sql`update ledger.postings set amount = 2 where currency = 'RUB'`).rejects.toThrow(
      /append-only/,
    );
    await expect(sql`delete from ledger.postings`).rejects.toThrow(/append-only/);
  });

  it("keeps every currency balanced and every account equal to its postings over random concurrent transfers", async () => {
    const owners = [randomUUID(), randomUUID()];
    const accountArb = fc.record({
      owner: fc.constantFrom(...owners),
      currency: fc.constantFrom(...(Object.keys(CURRENCIES) as Currency[])),
      kind: fc.constantFrom(...ACCOUNT_KINDS),
    });
    /** A leg in minor units of its currency; positive credits, negative debits. */
    const legArb = fc.record({ account: accountArb, minor: fc.integer({ min: -1_000_000, max: 1_000_000 }) });
    const transferArb = fc.record({
      key: fc.integer({ min: 0, max: 15 }),
      legs: fc.array(legArb, { minLength: 1, maxLength: 5 }),
      // Most transfers get legs that settle every currency; some are left as drawn and must be refused.
      balance: fc.boolean(),
    });

    const toPostings = (legs: { account: AccountRef; minor: number }[], settle: boolean): Posting[] => {
      const postings: Posting[] = [];
      const net = new Map<Currency, number>();
      for (const leg of legs) {
        const scale = CURRENCIES[leg.account.currency].scale;
        const amount = new Decimal(Math.abs(leg.minor)).dividedBy(new Decimal(10).pow(scale));
        postings.push(leg.minor >= 0 ? credit(leg.account, amount) : debit(leg.account, amount));
        net.set(leg.account.currency, (net.get(leg.account.currency) ?? 0) + leg.minor);
      }
      if (settle) {
        for (const [currency, minor] of net) {
          const scale = CURRENCIES[currency].scale;
          const amount = new Decimal(Math.abs(minor)).dividedBy(new Decimal(10).pow(scale));
          const account: AccountRef = { owner: owners[0]!, currency, kind: "adjustments" };
          postings.push(minor > 0 ? debit(account, amount) : credit(account, amount));
        }
      }
      return postings;
    };

    await fc.assert(
      fc.asyncProperty(fc.array(transferArb, { minLength: 1, maxLength: 8 }), async (transfers) => {
        const run = randomUUID();
        const outcomes = await Promise.allSettled(
          transfers.map((t) =>
            withRetry(() =>
              sql.begin((tx) =>
                postTransfer(tx, {
                  key: `prop:${run}:${t.key}`,
                  kind: "test",
                  shopId: owners[0]!,
                  postings: toPostings(t.legs, t.balance),
                }),
              ),
            ),
          ),
        );
        for (const outcome of outcomes) {
          if (outcome.status === "rejected") expect(outcome.reason).toBeInstanceOf(UnbalancedTransferError);
        }
        expect(await unbalancedTransfers()).toEqual([]);
        expect(await driftedAccounts()).toEqual([]);
      }),
      { numRuns: 30 },
    );
  });
});
