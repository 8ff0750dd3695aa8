import { randomUUID } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { connectNats, type Nats, startNatsProxy } from "@gw/events";
import { createLogger } from "@gw/log";
import type { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failureOf, type OperationsHarness, startHarness } from "../test/harness.ts";
import { toConnectError } from "./lifecycle/catalogue.ts";
import { isDomainError } from "./lifecycle/errors.ts";
import { Pricing, type QuoteInput } from "./pricing.ts";

let h: OperationsHarness;
let nats: Nats;
const logger = createLogger("pricing-test", "silent");

beforeAll(async () => {
  h = await startHarness({ budgetMs: 4_000, attemptTimeoutMs: 1_000 });
  await h.provider("acme", { mode: "accept", expires_in_seconds: 900 });
  nats = await connectNats(h.config.NATS_URL, "pricing-test");
});
afterAll(async () => {
  await nats?.nc.close();
  await h?.stop();
});

/** The real ledger client, counting the terms reads and able to hold one until released. */
function countingLedger(ledger: Client<typeof LedgerService>) {
  const state = {
    reads: 0,
    /** Set: the next terms read, once answered by the ledger, waits for this before returning. */
    hold: undefined as Promise<void> | undefined,
    /** Resolves when a held read has its answer from the ledger. */
    held: undefined as Promise<void> | undefined,
  };
  let heldReached: () => void = () => {};
  const client = new Proxy(ledger, {
    get(target, prop, receiver) {
      if (prop !== "getPricingTerms") return Reflect.get(target, prop, receiver);
      return async (...args: Parameters<typeof ledger.getPricingTerms>) => {
        state.reads++;
        const answer = await target.getPricingTerms(...args);
        const hold = state.hold;
        if (hold) {
          state.hold = undefined;
          heldReached();
          await hold;
        }
        return answer;
      };
    },
  });
  const holdNext = () => {
    let release: () => void = () => {};
    state.hold = new Promise<void>((r) => {
      release = r;
    });
    state.held = new Promise<void>((r) => {
      heldReached = r;
    });
    return release;
  };
  return { client, state, holdNext };
}

const tier = (minAmount: string, maxAmount: string, percent: string, fixed: string) => ({
  minAmount,
  maxAmount,
  percent,
  fixed,
});

const input = (shopId: string, over: Partial<QuoteInput> = {}): QuoteInput => ({
  shopId,
  method: "WT_RUB_C2C",
  direction: "payin",
  amount: "1000.00",
  currency: "RUB",
  settlementCurrency: "RUB",
  ...over,
});

async function cachedPricing(ledger: Client<typeof LedgerService>, nc = nats.nc) {
  const pricing = Pricing.cached(ledger, nc, h.config.EVENTS_PREFIX, logger);
  await pricing.start();
  return pricing;
}

/** What an answer or a refusal looks like, for comparing the local quote with the ledger's. */
async function outcome(call: Promise<unknown>) {
  try {
    const { pricingVersion: _, ...answer } = (await call) as Record<string, unknown>;
    return { answer: JSON.parse(JSON.stringify(answer), (k, v) => (k.startsWith("$") ? undefined : v)) };
  } catch (err) {
    // As a client gets it: a domain error through the handler boundary's catalogue.
    const answered = isDomainError(err) ? toConnectError(err, logger, "CreateOperation") : err;
    return { refused: await failureOf(Promise.reject(answered)) };
  }
}

describe("the local quote", () => {
  it("answers as the ledger's Quote: tier bounds, rounding, FX, payouts, and both refusals", async () => {
    const shopId = randomUUID();
    const tiers = [tier("0.01", "999.99", "2.5", "10"), tier("1000", "5000", "1.333", "0.005")];
    await h.ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: tiers, payout: tiers });
    // No RUB→USDT rate to start with, whichever test of this file set one before (rates
    // are global); the cache below is new, so it has read none.
    await h.sql`delete from ledger.fx_rates where from_currency = 'RUB' and to_currency = 'USDT'`;
    const pricing = await cachedPricing(h.ledger);
    try {
      const cases: QuoteInput[] = [];
      for (const amount of ["0.01", "999.99", "1000", "1000.00", "5000", "5000.01", "999.995", "3333.33"])
        for (const direction of ["payin", "payout"])
          for (const settlementCurrency of ["RUB", "USDT", "EUR"])
            cases.push(input(shopId, { amount, direction, settlementCurrency }));
      cases.push(input(randomUUID()), input(shopId, { amount: "0" }), input(shopId, { direction: "x" }));
      const compare = async () => {
        const codes: unknown[] = [];
        for (const c of cases) {
          const local = await outcome(pricing.quote(c));
          const ledger = await outcome(h.ledger.quote(c));
          expect(local, JSON.stringify(c)).toEqual(ledger);
          codes.push(local.refused?.info?.code ?? "priced");
        }
        return codes;
      };
      const before = await compare();
      expect(before).toContain("fx_rate_missing");
      expect(before).toContain("pricing_not_configured");
      expect(before).toContain("validation_failed");
      await h.ledger.putFxRate({ from: "RUB", to: "USDT", rate: "0.01234567891", source: "cb" });
      const after = await compare();
      expect(after).not.toContain("fx_rate_missing");
      expect(after).toContain("priced");
      expect(await pricing.quote(input(shopId, { settlementCurrency: "USDT" }))).toMatchObject({
        fxRate: "0.012346",
        fxSource: "cb",
      });
    } finally {
      pricing.stop();
    }
  });

  it("prices with an admin change, pricing or rate, from the very next quote", async () => {
    const shopId = randomUUID();
    await h.ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier("0", "10000", "1", "0")] });
    await h.ledger.putFxRate({ from: "RUB", to: "USDT", rate: "0.01", source: "a" });
    const counted = countingLedger(h.ledger);
    const pricing = await cachedPricing(counted.client);
    try {
      expect(await pricing.quote(input(shopId))).toMatchObject({ commissionAmount: "10.00" });
      expect(await pricing.quote(input(shopId))).toMatchObject({ commissionAmount: "10.00" });
      const usdt = input(shopId, { settlementCurrency: "USDT" });
      expect(await pricing.quote(usdt)).toMatchObject({ settlementAmount: "9.900000", fxRate: "0.010000" });
      expect(await pricing.quote(usdt)).toMatchObject({ settlementAmount: "9.900000" });
      expect(counted.state.reads).toBe(2); // one per key: the repeats were cached

      await h.ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier("0", "10000", "2", "0")] });
      expect(await pricing.quote(input(shopId))).toMatchObject({ commissionAmount: "20.00" });

      await h.ledger.putFxRate({ from: "RUB", to: "USDT", rate: "0.02", source: "b" });
      expect(await pricing.quote(usdt)).toMatchObject({
        commissionAmount: "0.400000",
        settlementAmount: "19.600000",
        fxRate: "0.020000",
        fxSource: "b",
      });
      // The tiers removed: the next quote is refused, not priced from the old tier.
      await h.ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [] });
      expect(await outcome(pricing.quote(input(shopId)))).toMatchObject({
        refused: { info: { code: "pricing_not_configured" } },
      });
    } finally {
      pricing.stop();
    }
  });

  it("stores nothing from a terms read that an invalidation overtook", async () => {
    const shopId = randomUUID();
    await h.ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier("0", "10000", "1", "0")] });
    const counted = countingLedger(h.ledger);
    const pricing = await cachedPricing(counted.client);
    try {
      const release = counted.holdNext();
      const first = pricing.quote(input(shopId));
      await counted.state.held; // the ledger answered 1 %, not yet handed back
      await h.ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier("0", "10000", "3", "0")] });
      // The invalidation reached this connection (a round trip after the ledger's flush).
      await nats.nc.flush();
      release();
      // The overtaken read still answers its own request (priced before the change was read)...
      expect(await first).toMatchObject({ commissionAmount: "10.00" });
      // ...but was not kept: the next quote reads the new terms.
      expect(await pricing.quote(input(shopId))).toMatchObject({ commissionAmount: "30.00" });
      expect(counted.state.reads).toBe(2);
    } finally {
      pricing.stop();
    }
  });

  it("does not serve a cached entry before a NATS round trip, so an invalidation still on its way is applied first", async () => {
    const proxy = await startNatsProxy(h.config.NATS_URL);
    const own = await connectNats(proxy.url, "pricing-test-slow");
    const shopId = randomUUID();
    await h.ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier("0", "10000", "1", "0")] });
    const pricing = await cachedPricing(h.ledger, own.nc);
    try {
      await pricing.quote(input(shopId));
      expect(await pricing.quote(input(shopId))).toMatchObject({ commissionAmount: "10.00" });
      // The server's messages now reach this cache's connection 300 ms late.
      proxy.delay(300);
      await h.ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier("0", "10000", "5", "0")] });
      expect(await pricing.quote(input(shopId))).toMatchObject({ commissionAmount: "50.00" });
    } finally {
      pricing.stop();
      await own.nc.close();
      await proxy.close();
    }
  });

  it("asks the ledger for every quote while NATS is disconnected, and caches again once it is back", async () => {
    const proxy = await startNatsProxy(h.config.NATS_URL);
    const own = await connectNats(proxy.url, "pricing-test-proxied");
    const shopId = randomUUID();
    await h.ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier("0", "10000", "1", "0")] });
    const counted = countingLedger(h.ledger);
    const pricing = await cachedPricing(counted.client, own.nc);
    try {
      await pricing.quote(input(shopId));
      await pricing.quote(input(shopId));
      expect(counted.state.reads).toBe(1);

      const disconnected = waitForStatus(own, "disconnect");
      proxy.cut();
      await disconnected;
      // A change whose invalidation this connection cannot receive: seen all the same.
      await h.ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier("0", "10000", "4", "0")] });
      for (let i = 0; i < 3; i++)
        expect(await pricing.quote(input(shopId))).toMatchObject({ commissionAmount: "40.00" });
      expect(counted.state.reads).toBe(4);

      const reconnected = waitForStatus(own, "reconnect");
      proxy.restore();
      await reconnected;
      await pricing.quote(input(shopId));
      await pricing.quote(input(shopId));
      expect(counted.state.reads).toBe(5);
    } finally {
      pricing.stop();
      await own.nc.close();
      await proxy.close();
    }
  });
});

describe("a create", () => {
  it("records the pricing version its quote was priced at, and prices with an admin change at once", async () => {
    const shop = await h.shop(["acme"], { percent: "1", fixed: "0" });
    const create = async () => {
      const mop = `mop-${randomUUID()}`;
      await h.operations.createOperation({
        scope: shop,
        type: "payment",
        merchantOperationId: mop,
        clientId: "client-1",
        method: "WT_RUB_C2C",
        amount: "1000.00",
        currency: "RUB",
      });
      const row = await h.store.findByMop(shop.shopId, mop);
      return { percent: row?.commission_percent, version: row?.pricing_version };
    };
    const version = async () =>
      (await h.ledger.getPricingTerms(input(shop.shopId))).pricingVersion.toString();

    const first = await create();
    expect(first).toEqual({ percent: "1.0000", version: await version() });
    expect(await create()).toEqual(first);

    const tiers = [tier("0.01", "10000000.00", "2.75", "0")];
    await h.ledger.putPricing({ shopId: shop.shopId, method: "WT_RUB_C2C", payin: tiers, payout: tiers });
    const second = await create();
    expect(second).toEqual({ percent: "2.7500", version: await version() });
    expect(BigInt(second.version!)).toBeGreaterThan(BigInt(first.version!));
  });
});

/** Resolves at the next status of `type` on the connection. */
async function waitForStatus(n: Nats, type: string) {
  for await (const s of n.nc.status()) if (s.type === type) return;
}
