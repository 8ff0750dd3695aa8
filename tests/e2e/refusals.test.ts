import { Decimal } from "@gw/money";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balanceRow, errorOf, newMop, Operator, paymentBody, type TestShop } from "../src/gateway.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// A refusal is not an outage (issue 26, items 2 and 3), through the edge: a create that
// can never succeed answers a 4xx with its own code, with nothing created, reserved or
// sent; and a payout that no provider accepted has its reserve back on the balance by the
// time its 503 is answered.

const cardPayout = (overrides: Record<string, unknown> = {}) => ({
  merchant_operation_id: newMop("payout"),
  client_id: "customer-9",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
  number: "2200123456789010",
  ...overrides,
});

/** Tiers from 1.00 to 1,000,000.00, both directions. */
const TIERS = {
  payin: [{ min_amount: "1.00", max_amount: "1000000.00", percent: "2", fixed: "0" }],
  payout: [{ min_amount: "1.00", max_amount: "1000000.00", percent: "1", fixed: "10" }],
};

describe("refusals through the edge", () => {
  let stack: TestStack;
  let operator: Operator;
  let provider: string;
  const shops: TestShop[] = [];

  beforeAll(async () => {
    stack = await startTestStack();
    operator = new Operator(stack);
    provider = await operator.provider("refusals");
  }, 180_000);

  afterAll(async () => {
    for (const shop of shops) await shop.receiver.stop();
    await stack?.stop();
  });

  async function shop(settlementCurrency: string, route = provider): Promise<TestShop> {
    const s = await operator.newShop({
      name: "refusals",
      routes: { WT_RUB_C2C: { payin: [route], payout: [route], settlement_currency: settlementCurrency } },
    });
    shops.push(s);
    const res = await operator.admin("PUT", `/shops/${s.shopId}/pricing/WT_RUB_C2C`, TIERS);
    expect(res.status).toBe(200);
    await operator.adjust(s.shopId, settlementCurrency, "100000.00");
    return s;
  }

  /** Nothing of the refused create exists: no operation, no reserve, nothing at any provider. */
  async function nothingOf(s: TestShop, mop: string, reservedBefore: string) {
    const state = await s.api.state({ merchant_operation_id: mop });
    expect(errorOf(state)).toMatchObject({ status: 404, code: "operation_not_found" });
    expect(new Decimal(balanceRow(await s.api.balances(), "RUB").reserved).toFixed(2)).toBe(reservedBefore);
  }

  for (const [what, amount] of [
    ["below every tier", "0.01"],
    ["above every tier", "999999999.99"],
  ] as const) {
    for (const type of ["payout", "payment"] as const) {
      it(`answers a ${type} of ${amount} (${what}) 412 pricing_not_configured on amount, and creates nothing`, async () => {
        const s = await shop("RUB");
        const before = new Decimal(balanceRow(await s.api.balances(), "RUB").reserved).toFixed(2);
        const mop = newMop(type);
        const body =
          type === "payout"
            ? cardPayout({ merchant_operation_id: mop, amount })
            : paymentBody({ merchant_operation_id: mop, amount });
        // Twice: the first create reads the terms (cache miss), the second is priced from the cache.
        for (let i = 0; i < 2; i++) {
          const res = type === "payout" ? await s.api.payout(body) : await s.api.payment(body);
          expect(errorOf(res)).toEqual({ status: 412, code: "pricing_not_configured", field: "amount" });
          expect(res.headers.get("retry-after")).toBeNull();
        }
        await nothingOf(s, mop, before);
        const sent = await fetch(`${stack.urls.sandbox}/control/books`).then(
          (r) => r.json() as Promise<{ references: { provider: string }[] }>,
        );
        expect(sent.references.filter((r) => r.provider === provider)).toEqual([]);
      }, 60_000);
    }
  }

  it("answers a payout whose settlement currency has no FX rate 412 fx_rate_missing, and creates nothing", async () => {
    const s = await shop("USDT");
    const mop = newMop("payout");
    for (let i = 0; i < 2; i++) {
      const res = await s.api.payout(cardPayout({ merchant_operation_id: mop }));
      expect(errorOf(res)).toEqual({ status: 412, code: "fx_rate_missing", field: "settlement_currency" });
    }
    const state = await s.api.state({ merchant_operation_id: mop });
    expect(errorOf(state)).toMatchObject({ status: 404 });
  }, 60_000);

  it("releases a refused payout's reserve before answering: 10 refusals, each followed at once by a balance read with reserved back at 0", async () => {
    const decliner = await operator.provider("decliner", { payout: { mode: "decline" } });
    const s = await shop("RUB", decliner);
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await s.api.payout(cardPayout());
      expect(errorOf(res)).toMatchObject({ status: 503, code: "no_provider_accepted" });
      seen.push(new Decimal(balanceRow(await s.api.balances(), "RUB").reserved).toFixed(2));
    }
    expect(seen).toEqual(Array(10).fill("0.00"));
  }, 120_000);
});
