import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { createLogger } from "@gw/log";
import { CreateOperationRequestSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FakeLedger } from "../../test/fakes/ledger.ts";
import { type MemoryBehaviour, MemoryConnector } from "../connectors/memory.ts";
import { parseCreate } from "../domain/create-request.ts";
import type { ProviderConfig } from "../domain/providers.ts";
import { MemoryOperationStore } from "../repository/memory/store.ts";
import { claimAndRoute } from "./create.ts";
import type { CreateDeps } from "./create-deps.ts";

/**
 * The payout rule of the cascade, as a property of the whole create step on the in-memory
 * tier (memory store, memory providers, the fake ledger): whatever each provider of the
 * route does (accepts, declines, never answers, offers no withdrawal, cannot be reached),
 * after the create a payout is live (pending or completed) at one provider at most; the
 * row names that provider when it is accepted; a refused payout is live nowhere.
 */

const logger = createLogger("operations-payout-cascade-unit", "silent");

type Setting = MemoryBehaviour | "unreachable";
const setting: fc.Arbitrary<Setting> = fc.constantFrom<Setting>(
  { mode: "accept" },
  { mode: "decline" },
  { mode: "no_answer" },
  { mode: "no_answer", withdraw: "unsupported" },
  "unreachable",
);

async function payoutThrough(settings: Setting[]) {
  const store = new MemoryOperationStore();
  const connector = new MemoryConnector();
  const ledger = new FakeLedger().client();
  const shopId = randomUUID();
  const configs: ProviderConfig[] = [];
  for (const [i, s] of settings.entries()) {
    const name = `p${i}`;
    const config =
      s === "unreachable"
        ? { name, kind: "memory", baseUrl: `memory://${name}`, credentials: "c", methods: ["WT_RUB_C2C"] }
        : connector.register(name, { payout: s });
    configs.push(config);
    await store.putProvider(config);
  }
  const names = configs.map((c) => c.name);
  await store.putRoute(shopId, "WT_RUB_C2C", { payin: names, payout: names, settlementCurrency: "RUB" });
  const tier = { minAmount: "1", maxAmount: "1000000", percent: "0", fixed: "0" };
  await ledger.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier], payout: [tier] });
  const deps: CreateDeps = {
    store,
    ledger,
    connectorFor: (kind) => (kind === "memory" ? connector : undefined),
    callbackBaseUrl: "http://edge.invalid",
    budgetMs: 150,
    attemptTimeoutMs: 50,
    logger,
  };
  const input = parseCreate(
    create(CreateOperationRequestSchema, {
      scope: { shopId, merchantId: randomUUID() },
      type: "payout",
      merchantOperationId: randomUUID(),
      clientId: "client-1",
      method: "WT_RUB_C2C",
      amount: "100.00",
      currency: "RUB",
      number: "4111111111111111",
    }),
  );
  const outcome = await claimAndRoute(deps, input, new AbortController().signal).then(
    ({ row }) => ({ row }),
    (error: unknown) => ({ error }),
  );
  const row = (await store.findByMop(shopId, input.mop)) ?? ("row" in outcome ? outcome.row : undefined);
  const live: string[] = [];
  for (const config of configs) {
    if (!row) break;
    const status = await connector.status(config, row.id);
    if (status.status === "pending" || status.status === "completed") live.push(config.name);
  }
  return { row, live };
}

describe("a payout through any route of misbehaving providers", () => {
  it("is live at one provider at most, the one its row names, and nowhere once refused", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(setting, { minLength: 1, maxLength: 3 }), async (settings) => {
        const { row, live } = await payoutThrough(settings);
        expect(live.length).toBeLessThanOrEqual(1);
        if (row?.status === "pending" || row?.status === "completed") expect(live).toEqual([row.provider]);
        if (row?.status === "rejected") expect(live).toEqual([]);
      }),
      { numRuns: 25 },
    );
  });
});
