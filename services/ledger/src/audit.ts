import type { Sql } from "@gw/db";
import type {
  ListClearingByOperationRequest,
  ListShopTotalsRequest,
} from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { invalid } from "./errors.ts";

/**
 * The ledger's admin audit reads: what the money-conservation checker (or an operator)
 * compares with the providers' books, as server-side sums, a page at a time (keyset).
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A page's default and largest size. */
const PAGE = { default: 500, max: 1000 } as const;
const pageSize = (limit: number) => (limit > 0 ? Math.min(limit, PAGE.max) : PAGE.default);
const badCursor = () => invalid("cursor", "cursor must be the next_cursor of the page before");

/** Debits minus credits: what provider clearing holds against the providers. */
const CLEARING = "sum(case when p.side = 'debit' then p.amount else -p.amount end)";

/**
 * Per operation (keyset on its id) and currency: its transfers' provider clearing, the
 * part booked by a provider's completion (payment_settle, payout_complete), and how many
 * payout_complete transfers it has. An operation with transfers but no clearing posting
 * has one row with an empty currency and zero sums.
 */
export async function listClearingByOperation(sql: Sql, req: ListClearingByOperationRequest) {
  if (req.cursor !== "" && !UUID.test(req.cursor)) throw badCursor();
  const limit = pageSize(req.limit);
  const rows = await sql<
    {
      operation_id: string;
      shop_id: string;
      currency: string | null;
      booked: string | null;
      booked_on_completion: string | null;
      payout_completes: number;
    }[]
  >`
    with page as (
      select operation_id, min(shop_id) as shop_id,
             (count(*) filter (where kind = 'payout_complete'))::int as payout_completes
      from ledger.transfers
      where operation_id is not null
        and ${req.cursor === "" ? sql`true` : sql`operation_id > ${req.cursor}::uuid`}
      group by operation_id order by operation_id limit ${limit})
    select pg.operation_id::text, coalesce(c.shop_id, pg.shop_id) as shop_id, c.currency,
           c.booked::text, c.booked_on_completion::text, pg.payout_completes
    from page pg left join lateral (
      select a.owner as shop_id, p.currency, ${sql.unsafe(CLEARING)} as booked,
             coalesce(${sql.unsafe(CLEARING)} filter (where t.kind in ('payment_settle', 'payout_complete')), 0)
               as booked_on_completion
      from ledger.transfers t
      join ledger.postings p on p.transfer_id = t.id
      join ledger.accounts a on a.id = p.account_id
      where t.operation_id = pg.operation_id and a.kind = 'provider_clearing'
      group by 1, 2) c on true
    order by pg.operation_id, c.currency`;
  const pageIds = new Set(rows.map((r) => r.operation_id));
  return {
    operations: rows.map((r) => ({
      operationId: r.operation_id,
      shopId: r.shop_id,
      currency: r.currency ?? "",
      booked: r.booked ?? "0",
      bookedOnCompletion: r.booked_on_completion ?? "0",
      payoutCompletes: r.payout_completes,
    })),
    nextCursor: pageIds.size === limit ? (rows.at(-1)?.operation_id ?? "") : "",
  };
}

/**
 * Per shop and currency (keyset on both): provider clearing over every transfer, and
 * the sum of all the shop's account balances (zero in a sound double-entry ledger).
 */
export async function listShopTotals(sql: Sql, req: ListShopTotalsRequest) {
  let after: [string, string] | undefined;
  if (req.cursor !== "") {
    try {
      after = JSON.parse(Buffer.from(req.cursor, "base64url").toString("utf8"));
    } catch {
      throw badCursor();
    }
    if (!Array.isArray(after) || after.length !== 2 || !after.every((v) => typeof v === "string")) {
      throw badCursor();
    }
  }
  const limit = pageSize(req.limit);
  const rows = await sql<
    { shop_id: string; currency: string; provider_clearing: string; accounts_sum: string }[]
  >`
    select g.owner as shop_id, g.currency, coalesce(c.booked, 0)::text as provider_clearing,
           g.accounts_sum::text
    from (select owner, currency, sum(balance) as accounts_sum from ledger.accounts
          where ${after ? sql`(owner, currency) > (${after[0]}, ${after[1]})` : sql`true`}
          group by 1, 2 order by 1, 2 limit ${limit}) g
    left join lateral (
      select ${sql.unsafe(CLEARING)} as booked
      from ledger.postings p join ledger.accounts a on a.id = p.account_id
      where a.owner = g.owner and a.currency = g.currency and a.kind = 'provider_clearing') c on true
    order by 1, 2`;
  const last = rows.at(-1);
  return {
    totals: rows.map((r) => ({
      shopId: r.shop_id,
      currency: r.currency,
      providerClearing: r.provider_clearing,
      accountsSum: r.accounts_sum,
    })),
    nextCursor:
      rows.length === limit && last
        ? Buffer.from(JSON.stringify([last.shop_id, last.currency])).toString("base64url")
        : "",
  };
}
