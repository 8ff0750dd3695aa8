import { Decimal } from "@gw/money";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balanceRow, Operator, paymentBody, type TestShop } from "../src/gateway.ts";
import { pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// What a shop is charged when the payer pays less than the fee, and the FX rate shown
// being the rate used: the operation object and the ledger say the same thing
// (docs/architecture.md, "Commission and FX figures").

/** A stored rate with twelve places: the gateway quotes and settles it at six (0.012346). */
const RATE = "0.012345678912";

describe("fees above the captured amount, and the fx_rate shown", () => {
  let stack: TestStack;
  let operator: Operator;
  let provider: string;
  let sql: postgres.Sql;

  beforeAll(async () => {
    stack = await startTestStack();
    operator = new Operator(stack);
    provider = await operator.provider("fees");
    sql = postgres(stack.databaseUrl, { max: 1 });
  });

  afterAll(async () => {
    await sql?.end();
    await stack?.stop();
  });

  /** A RUB shop whose payins cost 2 % + 100.00. */
  async function feeShop(settlementCurrency = "RUB"): Promise<TestShop> {
    const shop = await operator.newShop({
      name: "fees",
      routes: {
        WT_RUB_C2C: { payin: [provider], payout: [provider], settlement_currency: settlementCurrency },
      },
    });
    const res = await operator.admin("PUT", `/shops/${shop.shopId}/pricing/WT_RUB_C2C`, {
      payin: [{ min_amount: "0.01", max_amount: "1000000.00", percent: "2", fixed: "100.00" }],
      payout: [{ min_amount: "0.01", max_amount: "1000000.00", percent: "1", fixed: "10" }],
    });
    expect(res.status).toBe(200);
    return shop;
  }

  const completed = (shop: TestShop, operationId: string) =>
    pollUntil(
      "the payment to be completed",
      () => shop.api.state({ operation_id: operationId }),
      (r) => r.json?.status === "completed",
    );

  it("caps the commission at the captured amount: a 1,000.00 payment completed for 50.00 settles 0.00, never -51.00", async () => {
    const shop = await feeShop();
    const created = await shop.api.payment(paymentBody());
    expect(created.json).toMatchObject({
      status: "pending",
      commission_amount: "120.00",
      settlement_amount: "880.00",
    });
    const operationId = created.json.operation_id as string;

    await operator.settle(operationId, { legs: ["50.00"] });
    const done = await completed(shop, operationId);
    expect(done.json).toMatchObject({
      actual_amount: "50.00",
      recorded_amount: "50.00",
      commission_amount: "50.00",
      settlement_amount: "0.00",
      settlement_currency: "RUB",
    });

    // The ledger books exactly those figures: all 50.00 to commission, nothing to the shop.
    const postings = await pollUntil(
      "the ledger to book the settlement",
      () => sql<{ kind: string; side: string; amount: string }[]>`
        select a.kind, p.side, p.amount::text as amount
        from ledger.transfers t join ledger.postings p on p.transfer_id = t.id join ledger.accounts a on a.id = p.account_id
        where t.operation_id = ${operationId} and t.kind = 'payment_settle' order by a.kind`,
      (rows) => rows.length > 0,
    );
    expect(postings).toEqual([
      { kind: "commission_revenue", side: "credit", amount: "50.00" },
      { kind: "provider_clearing", side: "debit", amount: "50.00" },
    ]);
    expect(balanceRow(await shop.api.balances(), "RUB")).toMatchObject({
      balance: "0.00",
      current_minus: "0.00",
    });
  });

  it("credits the shop the settlement shown when the captured amount covers the fee", async () => {
    const shop = await feeShop();
    const created = await shop.api.payment(paymentBody());
    const operationId = created.json.operation_id as string;
    await operator.settle(operationId, { legs: ["1000.00"] });
    const done = await completed(shop, operationId);
    expect(done.json).toMatchObject({ commission_amount: "120.00", settlement_amount: "880.00" });
    const balances = await pollUntil(
      "the shop to be credited",
      () => shop.api.balances(),
      (r) => balanceRow(r, "RUB").balance !== "0.00",
    );
    expect(balanceRow(balances, "RUB").balance).toBe(done.json.settlement_amount);
  });

  it("shows the rate it settles at: recorded_amount = actual_amount × fx_rate as shown, at USDT scale", async () => {
    await operator.putFxRate("RUB", "USDT", RATE, "e2e-long-rate");
    const shop = await feeShop("USDT");
    const created = await shop.api.payment(paymentBody());
    expect(created.json).toMatchObject({ fx_rate: "0.012346", fx_source: "e2e-long-rate" });
    const operationId = created.json.operation_id as string;

    await operator.settle(operationId, { legs: ["999.99"] });
    const done = await completed(shop, operationId);
    const shown = done.json as Record<string, string>;
    // 999.99 × 0.012346 = 12.34587654, half-up to six places.
    expect(shown).toMatchObject({
      fx_rate: "0.012346",
      recorded_currency: "USDT",
      recorded_amount: "12.345877",
    });
    expect(new Decimal(shown.actual_amount!).times(shown.fx_rate!).toFixed(6)).toBe(shown.recorded_amount);
    // Commission 2 % of 12.345877 + 100 is above it: capped, nothing credited.
    expect(shown).toMatchObject({ commission_amount: "12.345877", settlement_amount: "0.000000" });
  });
});
