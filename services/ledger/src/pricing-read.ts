import type { Sql } from "@gw/db";
import { Decimal } from "@gw/money";
import type { ListPricingRequest } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { invalid } from "./errors.ts";

/** Prints a stored figure without exponent or trailing noise. */
const plain = (value: string) => new Decimal(value).toFixed();

/** The admin read of a shop's pricing: every method with a tier, both directions, by min_amount. */
export async function listPricing(sql: Sql, req: ListPricingRequest) {
  if (!req.shopId.trim()) throw invalid("shop_id", "shop_id is required");
  const rows = await sql<
    {
      method: string;
      direction: string;
      min_amount: string;
      max_amount: string;
      percent: string;
      fixed: string;
    }[]
  >`
    select method, direction, min_amount, max_amount, percent, fixed from ledger.pricing_tiers
     where shop_id = ${req.shopId} order by method, direction, min_amount`;
  const byMethod = new Map<string, { method: string; payin: Tier[]; payout: Tier[] }>();
  for (const r of rows) {
    let m = byMethod.get(r.method);
    if (!m) {
      m = { method: r.method, payin: [], payout: [] };
      byMethod.set(r.method, m);
    }
    (r.direction === "payin" ? m.payin : m.payout).push({
      minAmount: plain(r.min_amount),
      maxAmount: plain(r.max_amount),
      percent: plain(r.percent),
      fixed: plain(r.fixed),
    });
  }
  return { methods: [...byMethod.values()] };
}

interface Tier {
  minAmount: string;
  maxAmount: string;
  percent: string;
  fixed: string;
}
