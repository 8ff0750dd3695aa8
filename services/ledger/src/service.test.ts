import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { Sql } from "@gw/db";
import {
  GetPricingTermsRequestSchema,
  PostAdjustmentRequestSchema,
  type PricingTier,
  PutFxRateRequestSchema,
  PutPricingRequestSchema,
  QuoteRequestSchema,
  ReservePayoutRequestSchema,
} from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { OperationEventSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { Code, ConnectError, errorInfo } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyOperationEvent } from "./events.ts";
import { LedgerHandlers } from "./service.ts";
import { migratedDatabase, silentLogger } from "./test-support.ts";

let database: Awaited<ReturnType<typeof migratedDatabase>>;
let sql: Sql;
let ledger: LedgerHandlers;

beforeAll(async () => {
  database = await migratedDatabase();
  sql = database.sql;
  ledger = new LedgerHandlers(sql, silentLogger);
});
afterAll(() => database.close());

const tier = (minAmount: string, maxAmount: string, percent: string, fixed: string) =>
  ({ minAmount, maxAmount, percent, fixed }) as PricingTier;

/** Runs a call expected to fail and returns its Connect code and public code and field. */
async function failureOf(call: Promise<unknown>) {
  try {
    await call;
  } catch (err) {
    if (!(err instanceof ConnectError)) throw err;
    const info = errorInfo(err);
    return { code: err.code, publicCode: info?.code, field: info?.field };
  }
  throw new Error("expected the call to fail");
}

async function shopWithPricing(payin: PricingTier[], payout: PricingTier[] = []) {
  const shopId = randomUUID();
  await ledger.putPricing(create(PutPricingRequestSchema, { shopId, method: "WT_RUB_C2C", payin, payout }));
  return shopId;
}

const quote = (shopId: string, direction: string, amount: string, settlementCurrency = "RUB") =>
  ledger.quote(
    create(QuoteRequestSchema, {
      shopId,
      method: "WT_RUB_C2C",
      direction,
      amount,
      currency: "RUB",
      settlementCurrency,
    }),
  );

const adjust = (shopId: string, amount: string, adjustmentId = randomUUID(), currency = "RUB") =>
  ledger.postAdjustment(
    create(PostAdjustmentRequestSchema, { shopId, currency, amount, reason: "test", adjustmentId }),
  );

describe("Quote", () => {
  it("charges percent of the amount plus the fixed fee and settles a payin net of it", async () => {
    const shopId = await shopWithPricing([tier("100", "10000", "2.5", "10")]);
    const q = await quote(shopId, "payin", "1000.00");
    expect(q).toMatchObject({
      commissionAmount: "35.00",
      settlementAmount: "965.00",
      settlementCurrency: "RUB",
    });
    expect(q.fxRate).toBeUndefined();
    expect(q.tier).toMatchObject({ minAmount: "100", maxAmount: "10000", percent: "2.5", fixed: "10" });
  });

  it("charges a payout the amount plus the commission", async () => {
    const shopId = await shopWithPricing([], [tier("0", "5000", "1", "0")]);
    expect(await quote(shopId, "payout", "2000.00")).toMatchObject({
      commissionAmount: "20.00",
      settlementAmount: "2020.00",
    });
  });

  it("rounds the commission half-up to the settlement currency's scale", async () => {
    const shopId = await shopWithPricing([tier("0", "5000", "1", "0")]);
    // 1% of 100.50 is 1.005: half-up gives 1.01 where half-even would give 1.00.
    expect(await quote(shopId, "payin", "100.50")).toMatchObject({
      commissionAmount: "1.01",
      settlementAmount: "99.49",
    });
  });

  it("picks the tier whose closed range holds the amount, bounds included", async () => {
    const shopId = await shopWithPricing([tier("0", "999.99", "5", "0"), tier("1000", "5000", "1", "0")]);
    expect((await quote(shopId, "payin", "999.99")).tier?.percent).toBe("5");
    expect((await quote(shopId, "payin", "1000.00")).tier?.percent).toBe("1");
    expect((await quote(shopId, "payin", "5000.00")).tier?.percent).toBe("1");
  });

  it("converts at the stored rate and prices in the settlement currency", async () => {
    const shopId = await shopWithPricing([tier("0", "100000", "2", "0.5")]);
    await ledger.putFxRate(
      create(PutFxRateRequestSchema, { from: "RUB", to: "USDT", rate: "0.010512", source: "test-desk" }),
    );
    const q = await quote(shopId, "payin", "1000.00", "USDT");
    // 1000 × 0.010512 = 10.512; commission 2% of it + 0.5 = 0.71024; settlement 9.80176.
    expect(q).toMatchObject({
      commissionAmount: "0.710240",
      settlementAmount: "9.801760",
      settlementCurrency: "USDT",
      fxRate: "0.010512",
      fxSource: "test-desk",
    });
  });

  it("caps a payin's commission at its amount when the fee is larger, so it never settles below zero", async () => {
    const shopId = await shopWithPricing([tier("0", "100000", "2", "100")]);
    expect(await quote(shopId, "payin", "50.00")).toMatchObject({
      commissionAmount: "50.00",
      settlementAmount: "0.00",
    });
  });

  it("quotes the rate rounded to six places and prices with exactly that rate", async () => {
    const shopId = await shopWithPricing([tier("0", "100000", "0", "0")]);
    await ledger.putFxRate(
      create(PutFxRateRequestSchema, { from: "RUB", to: "USDT", rate: "0.0105125", source: "test-desk" }),
    );
    const q = await quote(shopId, "payin", "1000.00", "USDT");
    // Shown 0.010513 (half-up); 1000 × 0.010513 = 10.513000, where the stored rate gives 10.512500.
    expect(q).toMatchObject({ fxRate: "0.010513", settlementAmount: "10.513000" });
  });

  it("answers pricing_not_configured when no tier holds the amount", async () => {
    const shopId = await shopWithPricing([tier("100", "200", "1", "0")]);
    expect(await failureOf(quote(shopId, "payin", "200.01"))).toMatchObject({
      code: Code.FailedPrecondition,
      publicCode: "pricing_not_configured",
    });
    expect(await failureOf(quote(shopId, "payout", "150.00"))).toMatchObject({
      publicCode: "pricing_not_configured",
    });
  });

  it("answers fx_rate_missing when no rate converts to the settlement currency", async () => {
    const fresh = await migratedDatabase();
    try {
      const isolated = new LedgerHandlers(fresh.sql, silentLogger);
      const shopId = randomUUID();
      await isolated.putPricing(
        create(PutPricingRequestSchema, {
          shopId,
          method: "WT_RUB_C2C",
          payin: [tier("0", "1000", "1", "0")],
        }),
      );
      const call = isolated.quote(
        create(QuoteRequestSchema, {
          shopId,
          method: "WT_RUB_C2C",
          direction: "payin",
          amount: "10.00",
          currency: "RUB",
          settlementCurrency: "USDT",
        }),
      );
      expect(await failureOf(call)).toMatchObject({
        code: Code.FailedPrecondition,
        publicCode: "fx_rate_missing",
      });
    } finally {
      await fresh.close();
    }
  });

  it("rejects an amount that is not a positive decimal string", async () => {
    const shopId = await shopWithPricing([tier("0", "1000", "1", "0")]);
    for (const amount of ["", "-1.00", "1e3", "0.00", "abc"]) {
      expect(await failureOf(quote(shopId, "payin", amount))).toMatchObject({
        code: Code.InvalidArgument,
        publicCode: "validation_failed",
        field: "amount",
      });
    }
  });
});

describe("PutPricing", () => {
  it("leaves one of two concurrent writes' tiers, never both overlapping (run many times)", async () => {
    for (let round = 0; round < 20; round++) {
      const shopId = randomUUID();
      const put = (percent: string) =>
        ledger.putPricing(
          create(PutPricingRequestSchema, {
            shopId,
            method: "WT_RUB_C2C",
            payin: [tier("0.01", "999.99", percent, "0"), tier("1000", "100000", percent, "0")],
          }),
        );
      await Promise.all([put("1"), put("2")]);
      const rows = await sql<{ percent: string }[]>`
        select percent::text from ledger.pricing_tiers where shop_id = ${shopId} and method = 'WT_RUB_C2C'`;
      expect(rows).toHaveLength(2);
      expect(new Set(rows.map((r) => Number(r.percent))).size).toBe(1);
    }
  });

  const put = (payin: PricingTier[], payout: PricingTier[] = []) =>
    failureOf(
      ledger.putPricing(
        create(PutPricingRequestSchema, { shopId: randomUUID(), method: "WT_RUB_C2C", payin, payout }),
      ),
    );

  it("rejects overlapping tiers and names the later one", async () => {
    expect(await put([], [tier("0", "1000", "1", "0"), tier("1000", "2000", "1", "0")])).toMatchObject({
      code: Code.InvalidArgument,
      publicCode: "validation_failed",
      field: "payout[1].min_amount",
    });
  });

  it("rejects a tier whose max is below its min", async () => {
    expect(await put([tier("500", "100", "1", "0")])).toMatchObject({ field: "payin[0].max_amount" });
  });

  it("rejects a percent above 100, a negative fee and text that is not a decimal", async () => {
    expect(await put([tier("0", "100", "100.01", "0")])).toMatchObject({ field: "payin[0].percent" });
    expect(await put([tier("0", "100", "1", "-1")])).toMatchObject({ field: "payin[0].fixed" });
    expect(await put([tier("0", "1e5", "1", "0")])).toMatchObject({ field: "payin[0].max_amount" });
  });

  it("rejects an unknown method", async () => {
    const call = ledger.putPricing(
      create(PutPricingRequestSchema, { shopId: randomUUID(), method: "CASH", payin: [] }),
    );
    expect(await failureOf(call)).toMatchObject({ publicCode: "validation_failed", field: "method" });
  });

  it("replaces every earlier tier of the shop and method", async () => {
    const shopId = await shopWithPricing([tier("0", "1000", "1", "0")], [tier("0", "1000", "1", "0")]);
    await ledger.putPricing(
      create(PutPricingRequestSchema, {
        shopId,
        method: "WT_RUB_C2C",
        payin: [tier("2000", "3000", "3", "0")],
      }),
    );
    expect(await failureOf(quote(shopId, "payin", "500.00"))).toMatchObject({
      publicCode: "pricing_not_configured",
    });
    expect(await failureOf(quote(shopId, "payout", "500.00"))).toMatchObject({
      publicCode: "pricing_not_configured",
    });
    expect((await quote(shopId, "payin", "2500.00")).commissionAmount).toBe("75.00");
  });
});

describe("PutFxRate", () => {
  it("rejects a zero rate, an unknown currency and a conversion to the same currency", async () => {
    const put = (from: string, to: string, rate: string) =>
      failureOf(ledger.putFxRate(create(PutFxRateRequestSchema, { from, to, rate, source: "x" })));
    expect(await put("RUB", "USDT", "0")).toMatchObject({ publicCode: "validation_failed", field: "rate" });
    expect(await put("RUB", "USDT", "-0.5")).toMatchObject({ field: "rate" });
    expect(await put("RUB", "EUR", "1")).toMatchObject({ field: "to" });
    expect(await put("RUB", "RUB", "1")).toMatchObject({ field: "to" });
  });
});

describe("GetPricingTerms", () => {
  const terms = (handlers: LedgerHandlers, shopId: string, settlementCurrency = "RUB") =>
    handlers.getPricingTerms(
      create(GetPricingTermsRequestSchema, {
        shopId,
        method: "WT_RUB_C2C",
        direction: "payin",
        currency: "RUB",
        settlementCurrency,
      }),
    );

  it("answers every tier, the rate or its absence, and a version every pricing or rate write raises (and then announces)", async () => {
    const fresh = await migratedDatabase();
    try {
      let announced = 0;
      const isolated = new LedgerHandlers(fresh.sql, silentLogger, async () => {
        announced++;
      });
      const shopId = randomUUID();
      expect(await terms(isolated, shopId, "USDT")).toMatchObject({
        tiers: [],
        fxRateMissing: true,
        pricingVersion: 0n,
      });
      await isolated.putPricing(
        create(PutPricingRequestSchema, {
          shopId,
          method: "WT_RUB_C2C",
          payin: [tier("1000.00", "5000", "1.50", "0"), tier("0", "999.99", "2", "10.5")],
        }),
      );
      expect(announced).toBe(1);
      const first = await terms(isolated, shopId, "USDT");
      expect(first).toMatchObject({
        tiers: [tier("0", "999.99", "2", "10.5"), tier("1000", "5000", "1.5", "0")],
        settlementCurrency: "USDT",
        fxRateMissing: true,
        pricingVersion: 1n,
      });
      expect(first.fxRate).toBeUndefined();
      await isolated.putFxRate(
        create(PutFxRateRequestSchema, { from: "RUB", to: "USDT", rate: "0.0123456789", source: "cb" }),
      );
      expect(announced).toBe(2);
      expect(await terms(isolated, shopId, "USDT")).toMatchObject({
        fxRate: "0.0123456789",
        fxSource: "cb",
        fxRateMissing: false,
        pricingVersion: 2n,
      });
      // Same currency: no rate asked for, none missing.
      expect(await terms(isolated, shopId)).toMatchObject({ fxRateMissing: false, pricingVersion: 2n });
    } finally {
      await fresh.close();
    }
  });

  it("validates its key as Quote does", async () => {
    const call = ledger.getPricingTerms(
      create(GetPricingTermsRequestSchema, {
        shopId: "s",
        method: "WT_RUB_C2C",
        direction: "in",
        currency: "RUB",
      }),
    );
    expect(await failureOf(call)).toMatchObject({ code: Code.InvalidArgument, field: "direction" });
  });
});

describe("GetBalances", () => {
  it("answers one zero row per currency for a shop with no postings", async () => {
    const { balances } = await ledger.getBalances({ shopId: randomUUID() });
    expect(balances).toEqual([
      { currency: "RUB", balance: "0.00", reserved: "0.00", currentMinus: "0.00" },
      { currency: "USDT", balance: "0.000000", reserved: "0.000000", currentMinus: "0.000000" },
    ]);
  });

  it("answers ledger_inconsistent, with no balances, when a stored balance differs from its postings", async () => {
    const shopId = randomUUID();
    await adjust(shopId, "100.00");
    await sql`update ledger.accounts set balance = balance + 1 where owner = ${shopId} and kind = 'available'`;
    expect(await failureOf(ledger.getBalances({ shopId }))).toMatchObject({
      code: Code.Internal,
      publicCode: "ledger_inconsistent",
    });
  });
});

describe("PostAdjustment", () => {
  it("credits the shop for a positive amount and debits it for a negative one", async () => {
    const shopId = randomUUID();
    await adjust(shopId, "100.00");
    await adjust(shopId, "-250.50");
    const { balances } = await ledger.getBalances({ shopId });
    expect(balances[0]).toEqual({
      currency: "RUB",
      balance: "-150.50",
      reserved: "0.00",
      currentMinus: "150.50",
    });
  });

  it("posts an adjustment once per id and answers a replay with the same transfer", async () => {
    const shopId = randomUUID();
    const id = randomUUID();
    const first = await adjust(shopId, "10.00", id);
    const second = await adjust(shopId, "10.00", id);
    expect(second.transferId).toBe(first.transferId);
    expect((await ledger.getBalances({ shopId })).balances[0]?.balance).toBe("10.00");
  });

  it("refuses a different request under a used adjustment id", async () => {
    const shopId = randomUUID();
    const id = randomUUID();
    await adjust(shopId, "10.00", id);
    expect(await failureOf(adjust(shopId, "11.00", id))).toMatchObject({
      code: Code.FailedPrecondition,
      publicCode: "idempotency_conflict",
    });
  });

  it("rejects a zero amount and one finer than the currency allows", async () => {
    const shopId = randomUUID();
    expect(await failureOf(adjust(shopId, "0.00"))).toMatchObject({ field: "amount" });
    expect(await failureOf(adjust(shopId, "1.001"))).toMatchObject({ field: "amount" });
    expect((await adjust(shopId, "1.000001", randomUUID(), "USDT")).transferId).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("ReservePayout", () => {
  /** A payout's event as operations queues it: the total in settlement_amount. */
  const payoutEvent = (shopId: string, operationId: string, type: string, version = 0n) =>
    create(OperationEventSchema, {
      eventId: randomUUID(),
      type,
      scope: { shopId, merchantId: randomUUID() },
      operation: {
        operationId,
        type: "payout",
        status: type.split(".")[1],
        expectedAmount: "1000.00",
        actualAmount: "0.00",
        currency: "RUB",
        settlementCurrency: "RUB",
        settlementAmount: "1020.00",
        commissionAmount: "20.00",
        version,
      },
    });
  const apply = (shopId: string, operationId: string, type: string, version = 0n) =>
    sql.begin((tx) => applyOperationEvent(tx, payoutEvent(shopId, operationId, type, version), silentLogger));
  const rub = async (shopId: string) =>
    (await ledger.getBalances({ shopId })).balances.find((b) => b.currency === "RUB");

  it("refuses a payout event type it does not know (redelivered, then dead-lettered), and passes over those that move no money", async () => {
    const shopId = randomUUID();
    const operationId = randomUUID();
    await expect(apply(shopId, operationId, "payout.manual_check")).resolves.toBeUndefined();
    // A newer operations' internal type reaching an older ledger (a rolling deploy in the
    // wrong order) must not be acked as a no-op: it may release or move money.
    await expect(apply(shopId, operationId, "payout.invented_later")).rejects.toThrow(
      /payout\.invented_later/,
    );
    await expect(apply(shopId, operationId, "payment.pending")).resolves.toBeUndefined();
  });

  it("reserves a payout's total once, however often it is asked and whenever its pending event comes, and releases it once", async () => {
    const shopId = randomUUID();
    const operationId = randomUUID();
    await adjust(shopId, "5000.00");
    const request = create(ReservePayoutRequestSchema, {
      shopId,
      operationId,
      settlementAmount: "1020.00",
      settlementCurrency: "RUB",
    });
    expect(await ledger.reservePayout(request)).toEqual({ posted: true, notHeld: false });
    expect(await ledger.reservePayout(request)).toEqual({ posted: false, notHeld: false });
    expect(await rub(shopId)).toMatchObject({ balance: "3980.00", reserved: "1020.00" });

    await apply(shopId, operationId, "payout.pending");
    expect(await rub(shopId)).toMatchObject({ balance: "3980.00", reserved: "1020.00" });

    await apply(shopId, operationId, "payout.rejected");
    await apply(shopId, operationId, "payout.rejected");
    expect(await rub(shopId)).toMatchObject({ balance: "5000.00", reserved: "0.00" });
    expect(await ledger.reservePayout(request)).toEqual({ posted: false, notHeld: true });
    expect(await rub(shopId)).toMatchObject({ balance: "5000.00", reserved: "0.00" });
  });

  it("releases a refused create's reserve once, reserves again for a retry's newer version, and ignores a late release or reserve of an older one", async () => {
    const shopId = randomUUID();
    const operationId = randomUUID();
    const reserve = (operationVersion: bigint) =>
      ledger.reservePayout(
        create(ReservePayoutRequestSchema, {
          shopId,
          operationId,
          settlementAmount: "1020.00",
          settlementCurrency: "RUB",
          operationVersion,
        }),
      );
    const kinds = async () =>
      (
        await sql<{ kind: string }[]>`
          select kind from ledger.transfers where operation_id = ${operationId} order by created_at, key`
      ).map((t) => t.kind);
    // Routing at version 1 reserves; nobody accepts (refused at version 3): released once,
    // however often the event is delivered.
    expect(await reserve(1n)).toEqual({ posted: true, notHeld: false });
    await apply(shopId, operationId, "payout.refused", 3n);
    await apply(shopId, operationId, "payout.refused", 3n);
    expect(await rub(shopId)).toMatchObject({ balance: "0.00", reserved: "0.00" });
    // A late repeat of the first routing's reserve posts nothing and holds none for it.
    expect(await reserve(1n)).toEqual({ posted: false, notHeld: true });
    // The retry routes at version 4 and reserves again; its second refusal (version 6)
    // arrives only after a third routing (version 7) reserved: that refusal is older than
    // the reserve held, so the reserve stays.
    expect(await reserve(4n)).toEqual({ posted: true, notHeld: false });
    expect(await rub(shopId)).toMatchObject({ balance: "-1020.00", reserved: "1020.00" });
    expect(await reserve(7n)).toEqual({ posted: false, notHeld: false });
    await apply(shopId, operationId, "payout.refused", 6n);
    expect(await rub(shopId)).toMatchObject({ balance: "-1020.00", reserved: "1020.00" });
    // Accepted this time: pending, then rejected by the provider, released once more.
    await apply(shopId, operationId, "payout.pending", 8n);
    await apply(shopId, operationId, "payout.rejected", 9n);
    expect(await reserve(7n)).toEqual({ posted: false, notHeld: true });
    expect(await rub(shopId)).toMatchObject({ balance: "0.00", reserved: "0.00" });
    expect(await kinds()).toEqual(["payout_reserve", "payout_release", "payout_reserve", "payout_release"]);
    const rows = await sql`select 1 from ledger.payout_reserves where operation_id = ${operationId}`;
    expect(rows).toHaveLength(1);
  });

  it("posts nothing when the pending event reserved first", async () => {
    const shopId = randomUUID();
    const operationId = randomUUID();
    await apply(shopId, operationId, "payout.pending");
    const request = create(ReservePayoutRequestSchema, {
      shopId,
      operationId,
      settlementAmount: "1020.00",
      settlementCurrency: "RUB",
    });
    expect(await ledger.reservePayout(request)).toEqual({ posted: false, notHeld: false });
    expect(await rub(shopId)).toMatchObject({ balance: "-1020.00", reserved: "1020.00" });
  });

  it("rejects a settlement amount that is not a positive decimal", async () => {
    const request = create(ReservePayoutRequestSchema, {
      shopId: randomUUID(),
      operationId: randomUUID(),
      settlementAmount: "-1.00",
      settlementCurrency: "RUB",
    });
    expect(await failureOf(ledger.reservePayout(request))).toMatchObject({
      code: Code.InvalidArgument,
      field: "settlement_amount",
    });
  });
});
