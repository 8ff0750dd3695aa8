import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newMop, Operator, send, type TestShop } from "../src/gateway.ts";
import { pollUntil } from "../src/merchant.ts";
import { startTestStack, type TestStack } from "../src/stack.ts";

// The self-matching pool over HTTP: payouts routed to the pool are its liquidity; the
// flexible link answers a payment with a `k` link, `amount_selection` or `rejected`; the
// availability endpoints report what the pool can take; a mixed route is refused.

const POOL = "self_matching";
const onlyPool = { payin: [POOL], payout: [POOL], settlement_currency: "RUB" };

describe("the self-matching pool over HTTP", () => {
  let stack: TestStack;
  let operator: Operator;
  /** Pays out through the pool: its payouts are what payers are matched with. */
  let payee: TestShop;
  /** Takes payments only through the pool, with the flexible link opted in. */
  let payer: TestShop;
  /** The pool and a provider in its payin route. */
  let mixed: TestShop;
  /** Only the pool, without the opt-in. */
  let plain: TestShop;

  beforeAll(async () => {
    stack = await startTestStack({
      extraEnv: { FLEXIBLE_LINK_SECRET: "e2e-flexible-link-secret-0123456789abcdef" },
    });
    operator = new Operator(stack);
    const provider = await operator.provider("pool-mixed");
    payee = await operator.newShop({
      name: "payee",
      routes: { WT_RUB_C2C: onlyPool, WT_RUB_PHONE: onlyPool },
    });
    payer = await operator.newShop({
      name: "payer",
      routes: { WT_RUB_C2C: onlyPool, WT_RUB_PHONE: onlyPool },
    });
    plain = await operator.newShop({ name: "plain", routes: { WT_RUB_C2C: onlyPool } });
    mixed = await operator.newShop({
      name: "mixed",
      routes: { WT_RUB_C2C: { payin: [POOL, provider], payout: [provider], settlement_currency: "RUB" } },
    });
    const optIn = await operator.admin("PUT", `/shops/${payer.shopId}/settings`, {
      flexible_link_enabled: true,
      flexible_picker: "ranges",
    });
    expect(optIn.status).toBe(200);
    // The pool: two card payouts of 1000.00 and 2000.00.
    for (const amount of ["1000.00", "2000.00"]) {
      const res = await payee.api.payout({
        merchant_operation_id: newMop("pool-payout"),
        client_id: "payee",
        method: "WT_RUB_C2C",
        amount,
        currency: "RUB",
        number: "2200123456789010",
        name: "Pool Payee",
      });
      expect(res.status).toBe(200);
      expect(res.json.status).toBe("pending");
    }
  }, 180_000);

  afterAll(async () => {
    for (const shop of [payee, payer, mixed, plain]) await shop?.receiver.stop();
    await stack?.stop();
  });

  const availability = (shop: TestShop, query: string) =>
    send("GET", `${stack.urls.edge}/v1/payment/availability?${query}`, {
      headers: { "x-api-key": shop.apiKey },
    });

  const flexible = (shop: TestShop, over: Record<string, unknown>) =>
    shop.api.post("/payment/link/flexible", {
      merchant_operation_id: newMop("flex"),
      client_id: "payer-1",
      method: "WT_RUB_C2C",
      currency: "RUB",
      recommended_amount: "1000.00",
      ...over,
    });

  it("reports the pool's amounts with full coverage for a pool-only shop and partial for a mixed one", async () => {
    const query = "method=WT_RUB_C2C&currency=RUB&min_amount=100.00&max_amount=3000.00";
    const full = await pollUntil(
      "both payouts in the pool",
      () => availability(payer, query),
      (r) => r.status === 200 && JSON.stringify(r.json.intervals).includes('"2000.00"'),
    );
    expect(full.headers.get("cache-control")).toBe("no-store");
    expect(full.json).toMatchObject({
      method: "WT_RUB_C2C",
      currency: "RUB",
      coverage: "full",
      reserved: false,
    });
    expect(full.json.intervals).toEqual([
      { min_amount: "100.00", max_amount: "1900.00" },
      { min_amount: "2000.00", max_amount: "2000.00" },
    ]);
    const partial = await availability(mixed, query);
    expect(partial.status).toBe(200);
    expect(partial.json.coverage).toBe("partial");
    const bad = await availability(
      payer,
      "method=WT_RUB_C2C&currency=RUB&min_amount=300.00&max_amount=200.00",
    );
    expect(bad.status).toBe(400);
  });

  it("recommends the pool's exact remainders first, then the requested amount, three by default, and reserves nothing", async () => {
    const query = "method=WT_RUB_C2C&currency=RUB&min_amount=100.00&max_amount=3000.00";
    const before = await availability(payer, query);
    expect(before.status).toBe(200);
    const res = await payer.api.post("/payment/recommendations", {
      method: "WT_RUB_C2C",
      currency: "RUB",
      amount: "1500.00",
      min_amount: "100.00",
      max_amount: "3000.00",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.json).toMatchObject({
      method: "WT_RUB_C2C",
      currency: "RUB",
      coverage: "full",
      reserved: false,
      truncated: false,
    });
    expect(res.json.evaluated_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect(res.json.recommendations).toEqual([
      { amount: "1000.00", delta: "-500.00" },
      { amount: "2000.00", delta: "500.00" },
      { amount: "1500.00", delta: "0.00" },
    ]);
    const after = await availability(payer, query);
    expect(after.json.intervals).toEqual(before.json.intervals);
  });

  it("creates the payment with a k link when the recommended amount is available, and a retry answers it unchanged", async () => {
    const mop = newMop("flex-now");
    const first = await flexible(payer, { merchant_operation_id: mop, recommended_amount: "1000.00" });
    expect(first.status).toBe(200);
    expect(first.json.status).toBe("awaiting_confirmation");
    expect(first.json.expected_amount).toBe("1000.00");
    expect(first.json.number).toBe("2200123456789010");
    expect(first.json.external_confirmation).toEqual({ required: true, methods: ["receipt"] });
    const url = new URL(first.json.payment_url);
    expect(`${url.origin}${url.pathname}`).toBe(`${stack.urls.pay}/${first.json.operation_id}`);
    const k = url.searchParams.get("k") ?? "";
    expect(Buffer.from(k, "base64url").length).toBeGreaterThanOrEqual(16);

    const again = await flexible(payer, { merchant_operation_id: mop, recommended_amount: "1000.00" });
    expect(again.json).toEqual(first.json);
    const state = await payer.api.state({ operation_id: first.json.operation_id });
    expect(state.status).toBe(200);
    expect(state.json.status).toBe("awaiting_confirmation");
    // The service never logs the credential.
    const { readFileSync } = await import("node:fs");
    expect(readFileSync(stack.logFile, "utf8")).not.toContain(k);
  });

  it("answers amount_selection without a payment when only other amounts are available, 404 from the state read, the same link on retry", async () => {
    const mop = newMop("flex-choose");
    const body = {
      merchant_operation_id: mop,
      recommended_amount: "5000.00",
      min_amount: "100.00",
      max_amount: "6000.00",
    };
    const first = await flexible(payer, body);
    expect(first.status).toBe(200);
    expect(Object.keys(first.json).sort()).toEqual(
      [
        "currency",
        "expires_at",
        "method",
        "operation_id",
        "payment_url",
        "recommended_amount",
        "status",
      ].sort(),
    );
    expect(first.json).toMatchObject({
      status: "amount_selection",
      method: "WT_RUB_C2C",
      recommended_amount: "5000.00",
    });
    expect(first.json.payment_url).toMatch(new RegExp(`^${stack.urls.pay}/${first.json.operation_id}\\?k=`));
    expect(new Date(first.json.expires_at).getTime()).toBeGreaterThan(Date.now());

    const again = await flexible(payer, body);
    expect(again.json).toEqual(first.json);
    const conflict = await flexible(payer, { ...body, recommended_amount: "4000.00" });
    expect(conflict.status).toBe(412);

    const byId = await payer.api.state({ operation_id: first.json.operation_id });
    expect(byId.status).toBe(404);
    const byMop = await payer.api.state({ merchant_operation_id: mop });
    expect(byMop.status).toBe(404);
  });

  it("answers rejected with nothing created when no amount is available", async () => {
    const mop = newMop("flex-none");
    const res = await flexible(payer, {
      merchant_operation_id: mop,
      method: "WT_RUB_PHONE",
      recommended_amount: "700.00",
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      operation_id: res.json.operation_id,
      status: "rejected",
      method: "WT_RUB_PHONE",
      currency: "RUB",
      recommended_amount: "700.00",
      payment_url: null,
    });
    expect((await payer.api.state({ merchant_operation_id: mop })).status).toBe(404);
  });

  it("answers 412 for a shop whose payin route has a provider besides the pool", async () => {
    const res = await flexible(mixed, {});
    expect(res.status).toBe(412);
    expect(res.json.error.code).toBe("flexible_route_not_pool");
  });

  it("creates an ordinary payment with payment_url null for a shop without the opt-in", async () => {
    const res = await flexible(plain, { recommended_amount: "2000.00" });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe("awaiting_confirmation");
    expect(res.json.payment_url).toBeNull();
  });

  it("refuses invalid flexible bounds with 400", async () => {
    const above = await flexible(payer, { recommended_amount: "900.00", min_amount: "1000.00" });
    expect(above.status).toBe(400);
    expect(above.json.error.field).toBe("recommended_amount");
    const crossed = await flexible(payer, { min_amount: "2000.00", max_amount: "1000.00" });
    expect(crossed.status).toBe(400);
    expect(crossed.json.error.field).toBe("min_amount");
  });

  it("refuses a zero recommended amount and a zero bound with 400 naming the field", async () => {
    const zero = await flexible(payer, { recommended_amount: "0.00" });
    expect(zero.status).toBe(400);
    expect(zero.json.error.field).toBe("recommended_amount");
    const zeroMin = await flexible(payer, { min_amount: "0.00" });
    expect(zeroMin.status).toBe(400);
    expect(zeroMin.json.error.field).toBe("min_amount");
  });
});
