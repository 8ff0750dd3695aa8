import { randomUUID } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import type { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { Code, ConnectError, errorInfo } from "@gw/rpc";
import { describe, expect, it } from "vitest";

type Ledger = Client<typeof LedgerService>;

/** The public code (and gRPC code) a call failed with. */
async function refusal(call: Promise<unknown>): Promise<{ code: Code; public?: string; field?: string }> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ConnectError)) throw new Error(`expected a ConnectError, got ${String(err)}`);
  return { code: err.code, public: errorInfo(err)?.code, field: errorInfo(err)?.field };
}

const quote = (
  shopId: string,
  over: { amount?: string; direction?: string; settlementCurrency?: string } = {},
) => ({
  shopId,
  method: "WT_RUB_C2C",
  direction: over.direction ?? "payin",
  amount: over.amount ?? "1000.00",
  currency: "RUB",
  settlementCurrency: over.settlementCurrency ?? "",
});

const tier = { minAmount: "100", maxAmount: "50000", percent: "2.5", fixed: "10" };

const rub = async (ledger: Ledger, shopId: string) =>
  (await ledger.getBalances({ shopId })).balances.find((b) => b.currency === "RUB");

/**
 * What operations relies on in the ledger (pricing and quotes, a payout's reserve and its
 * release), checked on the real ledger (ledger.test.ts) and on `FakeLedger`
 * (ledger.unit.test.ts). `make` gives a client; each test uses shops of its own.
 */
export function describeLedgerContract(name: string, make: () => Promise<Ledger>): void {
  describe(`${name}: the ledger operations uses`, () => {
    it("refuses a quote without pricing (pricing_not_configured) and a malformed one (validation_failed)", async () => {
      const ledger = await make();
      const shopId = randomUUID();
      expect(await refusal(ledger.quote(quote(shopId)))).toEqual({
        code: Code.FailedPrecondition,
        public: "pricing_not_configured",
        field: "amount",
      });
      expect((await refusal(ledger.quote({ ...quote(shopId), method: "NOPE" }))).public).toBe(
        "validation_failed",
      );
      expect((await refusal(ledger.quote(quote(shopId, { amount: "abc" })))).public).toBe(
        "validation_failed",
      );
      const terms = await ledger.getPricingTerms(quote(shopId));
      expect(terms.tiers).toEqual([]);
      expect(terms.settlementCurrency).toBe("RUB");
    });

    it("prices from the configured tier, both directions, and raises the pricing version", async () => {
      const ledger = await make();
      const shopId = randomUUID();
      const before = (await ledger.getPricingTerms(quote(shopId))).pricingVersion;
      await ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier], payout: [tier] });
      const terms = await ledger.getPricingTerms(quote(shopId));
      expect(terms.pricingVersion).toBeGreaterThan(before);
      expect(
        terms.tiers.map(({ minAmount, maxAmount, percent, fixed }) => ({
          minAmount,
          maxAmount,
          percent,
          fixed,
        })),
      ).toEqual([tier]);
      const payin = await ledger.quote(quote(shopId));
      expect([payin.commissionAmount, payin.settlementAmount, payin.settlementCurrency]).toEqual([
        "35.00",
        "965.00",
        "RUB",
      ]);
      expect(payin.tier?.percent).toBe("2.5");
      const payout = await ledger.quote(quote(shopId, { direction: "payout" }));
      expect([payout.commissionAmount, payout.settlementAmount]).toEqual(["35.00", "1035.00"]);
      expect((await refusal(ledger.quote(quote(shopId, { amount: "50000.01" })))).public).toBe(
        "pricing_not_configured",
      );
    });

    it("settles in another currency only with a rate (fx_rate_missing before)", async () => {
      const ledger = await make();
      const shopId = randomUUID();
      await ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier], payout: [] });
      const usdt = quote(shopId, { settlementCurrency: "USDT" });
      expect(await refusal(ledger.quote(usdt))).toEqual({
        code: Code.FailedPrecondition,
        public: "fx_rate_missing",
        field: "settlement_currency",
      });
      expect((await ledger.getPricingTerms(usdt)).fxRateMissing).toBe(true);
      await ledger.putFxRate({ from: "RUB", to: "USDT", rate: "0.0123456789", source: "cb" });
      const q = await ledger.quote(usdt);
      expect([q.fxRate, q.fxSource, q.settlementCurrency]).toEqual(["0.012346", "cb", "USDT"]);
      expect(q.settlementAmount).toBe("2.037350");
    });

    it("reserves a payout once per routing, even past the balance, and reports it in the balances", async () => {
      const ledger = await make();
      const shopId = randomUUID();
      const operationId = randomUUID();
      await ledger.postAdjustment({
        shopId,
        currency: "RUB",
        amount: "100.00",
        reason: "top up",
        adjustmentId: randomUUID(),
      });
      const reserve = { shopId, operationId, settlementAmount: "30.00", settlementCurrency: "RUB" };
      expect(await ledger.reservePayout({ ...reserve, operationVersion: 1n })).toMatchObject({
        posted: true,
        notHeld: false,
      });
      expect(await ledger.reservePayout({ ...reserve, operationVersion: 1n })).toMatchObject({
        posted: false,
        notHeld: false,
      });
      expect(await rub(ledger, shopId)).toMatchObject({
        balance: "70.00",
        reserved: "30.00",
        currentMinus: "0.00",
      });
      // The ledger does not check the balance: a payout past it leaves the shop in its current minus.
      await ledger.reservePayout({
        ...reserve,
        operationId: randomUUID(),
        settlementAmount: "100.00",
        operationVersion: 1n,
      });
      expect(await rub(ledger, shopId)).toMatchObject({ balance: "-30.00", reserved: "130.00" });
      expect(
        (await refusal(ledger.reservePayout({ ...reserve, settlementAmount: "-1", operationVersion: 1n })))
          .public,
      ).toBe("validation_failed");
    });

    it("releases a refused payout's reserve once; an older routing then holds none, a newer one reserves again", async () => {
      const ledger = await make();
      const shopId = randomUUID();
      const operationId = randomUUID();
      const reserve = { shopId, operationId, settlementAmount: "40.00", settlementCurrency: "RUB" };
      await ledger.reservePayout({ ...reserve, operationVersion: 1n });
      const release = { shopId, operationId, operationVersion: 2n };
      await ledger.releaseRefusedPayout(release);
      await ledger.releaseRefusedPayout(release);
      expect(await rub(ledger, shopId)).toMatchObject({ balance: "0.00", reserved: "0.00" });
      expect(await ledger.reservePayout({ ...reserve, operationVersion: 2n })).toMatchObject({
        posted: false,
        notHeld: true,
      });
      expect(await ledger.reservePayout({ ...reserve, operationVersion: 3n })).toMatchObject({
        posted: true,
        notHeld: false,
      });
      expect(await rub(ledger, shopId)).toMatchObject({ balance: "-40.00", reserved: "40.00" });
      expect((await refusal(ledger.releaseRefusedPayout({ ...release, operationVersion: 0n }))).public).toBe(
        "validation_failed",
      );
    });
  });
}
