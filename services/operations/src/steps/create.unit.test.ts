import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { createLogger } from "@gw/log";
import { CreateOperationRequestSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { errorInfo } from "@gw/rpc";
import { describe, expect, it } from "vitest";
import { FakeLedger } from "../../test/fakes/ledger.ts";
import { type MemoryBehaviour, MemoryConnector } from "../connectors/memory.ts";
import { parseCreate } from "../domain/create-request.ts";
import { MemoryOperationStore } from "../repository/memory/store.ts";
import { claimAndRoute } from "./create.ts";
import type { CreateDeps } from "./create-deps.ts";

/**
 * A create on the in-memory tier: the memory store, memory providers and the fake ledger
 * (each held to its contract with the real one); the unit tier refuses any socket or process.
 */

const logger = createLogger("operations-create-unit", "silent");

type Providers = Record<string, { payin?: MemoryBehaviour; payout?: MemoryBehaviour } | "unreachable">;

/** A shop routed through `providers` in order, priced at 2.5 % + 10, and a create against it. */
async function world(providers: Providers, options: { budgetMs?: number; priced?: boolean } = {}) {
  const store = new MemoryOperationStore();
  const connector = new MemoryConnector();
  const ledger = new FakeLedger();
  const shopId = randomUUID();
  const merchantId = randomUUID();
  // Unreachable: configured in operations, never registered with the memory providers (every answer `unknown`).
  for (const [name, settings] of Object.entries(providers))
    await store.putProvider(
      settings === "unreachable"
        ? { name, kind: "memory", baseUrl: `memory://${name}`, credentials: "c", methods: ["WT_RUB_C2C"] }
        : connector.register(name, settings),
    );
  const names = Object.keys(providers);
  await store.putRoute(shopId, "WT_RUB_C2C", { payin: names, payout: names, settlementCurrency: "RUB" });
  const client = ledger.client();
  if (options.priced !== false) {
    const tier = { minAmount: "1", maxAmount: "1000000", percent: "2.5", fixed: "10" };
    await client.putPricing({ shopId, method: "WT_RUB_C2C", payin: [tier], payout: [tier] });
  }
  const deps: CreateDeps = {
    store,
    ledger: client,
    connectorFor: (kind) => (kind === "memory" ? connector : undefined),
    callbackBaseUrl: "http://edge.invalid",
    budgetMs: options.budgetMs ?? 5_000,
    attemptTimeoutMs: 100,
    logger,
  };
  const request = (over: { type?: "payment" | "payout"; mop?: string; amount?: string } = {}) =>
    parseCreate(
      create(CreateOperationRequestSchema, {
        scope: { shopId, merchantId },
        type: over.type ?? "payment",
        merchantOperationId: over.mop ?? `mop-${randomUUID()}`,
        clientId: "client-1",
        method: "WT_RUB_C2C",
        amount: over.amount ?? "1000.00",
        currency: "RUB",
        ...(over.type === "payout" ? { number: "4111111111111111", name: "Ivan" } : {}),
      }),
    );
  const run = (input: ReturnType<typeof request>) => claimAndRoute(deps, input, new AbortController().signal);
  const asked = (name: string, operationId: string) =>
    connector.received(name, operationId).map((r) => ({ decision: r.decision, requests: r.requests }));
  const rub = async () => (await client.getBalances({ shopId })).balances.find((b) => b.currency === "RUB");
  return { store, ledger, shopId, request, run, asked, rub };
}

/** What a create threw: its domain or ledger code. */
const codeOf = (call: Promise<unknown>) =>
  call.then(
    () => "resolved",
    (err: unknown) => errorInfo(err)?.code ?? (err as { code?: string }).code ?? String(err),
  );

describe("a create on the in-memory tier", () => {
  it("routes a payin to the first provider when it accepts, priced by the ledger, and asks no other", async () => {
    const w = await world({ a: {}, b: {} });
    const { row, replayed } = await w.run(w.request());
    expect({ status: row.status, provider: row.provider, replayed }).toEqual({
      status: "pending",
      provider: "a",
      replayed: false,
    });
    expect(row.number).toMatch(/^\d{16}$/);
    expect([row.commission_percent, row.commission_fixed, row.settlement_currency]).toEqual([
      "2.5000",
      "10.000000",
      "RUB",
    ]);
    expect(w.asked("a", row.id)).toEqual([{ decision: "accept", requests: 1 }]);
    expect(w.asked("b", row.id)).toEqual([]);
    expect(w.store.outbox().map((e) => e.subject)).toEqual([`${w.store.prefix}.operations.payment.pending`]);
  });

  it("goes on to the second provider when the first declines, and never asks the first again", async () => {
    const w = await world({ a: { payin: { mode: "decline" } }, b: {} });
    const { row } = await w.run(w.request());
    expect({ status: row.status, provider: row.provider, passed: row.routing_passed }).toEqual({
      status: "pending",
      provider: "b",
      passed: ["a"],
    });
    expect(w.asked("a", row.id)).toEqual([{ decision: "decline", requests: 1 }]);
    expect(w.asked("b", row.id)).toEqual([{ decision: "accept", requests: 1 }]);
  });

  it("leaves a payout with the provider whose create went unanswered: found holding it, never sent to the second", async () => {
    const w = await world({ a: { payout: { mode: "no_answer" } }, b: {} });
    const { row } = await w.run(w.request({ type: "payout" }));
    expect({ status: row.status, provider: row.provider }).toEqual({ status: "pending", provider: "a" });
    expect(w.asked("b", row.id)).toEqual([]);
    // Reserved before any provider was asked: 1000 + 2.5 % + 10.
    expect(await w.rub()).toMatchObject({ balance: "-1035.00", reserved: "1035.00" });
  });

  it("answers 503 when a payout's provider stays unknown to the end of the budget: still routing, the next never asked", async () => {
    const w = await world({ a: "unreachable", b: {} }, { budgetMs: 700 });
    const input = w.request({ type: "payout" });
    expect(await codeOf(w.run(input))).toBe("dependency_unavailable");
    const row = await w.store.findByMop(input.shopId, input.mop);
    expect({ status: row?.status, unresolved: row?.routing_unresolved, passed: row?.routing_passed }).toEqual(
      {
        status: "routing",
        unresolved: "a",
        passed: [],
      },
    );
    expect(w.asked("b", row?.id ?? "")).toEqual([]);
    // The reserve stays while a provider may be paying it out.
    expect(await w.rub()).toMatchObject({ reserved: "1035.00" });
  });

  it("refuses a payout no provider accepted, and releases its reserve before answering", async () => {
    const w = await world({ a: { payout: { mode: "decline" } }, b: { payout: { mode: "decline" } } });
    const input = w.request({ type: "payout" });
    expect(await codeOf(w.run(input))).toBe("no_provider_accepted");
    const row = await w.store.findByMop(input.shopId, input.mop);
    expect({ status: row?.status, provider: row?.provider }).toEqual({ status: "rejected", provider: null });
    expect(w.store.outbox().map((e) => e.subject)).toEqual([`${w.store.prefix}.operations.payout.refused`]);
    expect(await w.rub()).toMatchObject({ balance: "0.00", reserved: "0.00" });
  });

  it("answers a replay of the same body with the same operation, and refuses another body under the key", async () => {
    const w = await world({ a: {} });
    const mop = `mop-${randomUUID()}`;
    const first = await w.run(w.request({ mop }));
    const again = await w.run(w.request({ mop }));
    expect(again).toEqual({ row: first.row, replayed: true });
    expect(await codeOf(w.run(w.request({ mop, amount: "1000.01" })))).toBe("idempotency_conflict");
    expect(w.asked("a", first.row.id)).toEqual([{ decision: "accept", requests: 1 }]);
  });

  it("passes the ledger's pricing refusal through, with no row claimed and no provider asked", async () => {
    const w = await world({ a: {} }, { priced: false });
    const input = w.request();
    expect(await codeOf(w.run(input))).toBe("pricing_not_configured");
    expect(await w.store.findByMop(input.shopId, input.mop)).toBeUndefined();
    expect(w.store.outbox()).toEqual([]);
  });
});
