import { randomUUID } from "node:crypto";
import { createLogger } from "@gw/log";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failureOf, insertAbandonedRouting, type OperationsHarness, startHarness } from "../test/harness.ts";
import { connectorFor } from "./connectors/index.ts";
import { type CreateDeps, drive, operationIdFor } from "./create.ts";
import { DependencyUnavailableError } from "./lifecycle/errors.ts";

// The create cascade at the provider boundary: when a provider's "never received" is
// believed, and who may record a routing outcome.

let h: OperationsHarness;

beforeAll(async () => {
  h = await startHarness({
    budgetMs: 8_000,
    attemptTimeoutMs: 1_000,
    // The reconciler stays off: these tests drive routing rows themselves.
    config: { RECONCILE_INTERVAL_MS: "0" },
  });
  await h.provider("backup", { mode: "accept", expires_in_seconds: 900 }, { mode: "accept" });
}, 60_000);
afterAll(() => h?.stop());

type Shop = { shopId: string; merchantId: string };

const request = (shop: Shop, over: Record<string, unknown> = {}) => ({
  scope: shop,
  type: "payment",
  merchantOperationId: `mop-${randomUUID()}`,
  clientId: "client-1",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
  ...over,
});

/** The providers the sandbox recorded our operation id at. */
async function holders(id: string): Promise<string[]> {
  const res = await fetch(`${h.sandboxUrl}/control/operations/${id}`);
  if (res.status === 404) return [];
  const body = (await res.json()) as { received: { provider: string }[] };
  return body.received.map((r) => r.provider).sort();
}

/**
 * A provider of its own whose payouts are recorded only `slowMs` after their create
 * arrives; `withdraw`: whether it offers a withdrawal by key (a durable tombstone).
 */
async function queuedProvider(slowMs: number, withdraw: "supported" | "unsupported" = "supported") {
  const name = `queued-${randomUUID().slice(0, 8)}`;
  await h.provider(
    name,
    { mode: "accept" },
    {
      mode: "accept",
      withdraw,
      faults: { seed: "cascade", slow_ms: slowMs, create: { record_after_delay: 1 } },
    },
  );
  return name;
}

/** What one provider of the sandbox holds under our operation id, if anything. */
async function heldAt(id: string, provider: string) {
  const res = await fetch(`${h.sandboxUrl}/control/operations/${id}`);
  if (res.status === 404) return undefined;
  const body = (await res.json()) as { received: { provider: string; status: string; decision: string }[] };
  return body.received.find((r) => r.provider === provider);
}

describe("a payout whose create answer was lost", () => {
  it("is that provider's when it records the create late: its early not_found is no decline, and the next provider never receives it", async () => {
    const queued = await queuedProvider(1_500);
    const shop = await h.shop([queued, "backup"]);
    const req = request(shop, { type: "payout", number: "4111111111111111" });
    const { operation } = await h.operations.createOperation(req);
    expect(operation).toMatchObject({ status: "pending" });
    const id = operationIdFor(shop.shopId, req.merchantOperationId);
    expect(await h.store.findAnyById(id)).toMatchObject({ provider: queued, routing_passed: [] });
    expect(await holders(id)).toEqual([queued]);
  }, 30_000);

  it("goes on to the next provider only once the first confirms a withdrawal by key: its not_found alone passes nobody over", async () => {
    // Records the create a minute late, longer than the whole create budget.
    const queued = await queuedProvider(60_000);
    const shop = await h.shop([queued, "backup"]);
    const req = request(shop, { type: "payout", number: "4111111111111111" });
    const { operation } = await h.operations.createOperation(req);
    expect(operation).toMatchObject({ status: "pending" });
    const id = operationIdFor(shop.shopId, req.merchantOperationId);
    expect(await h.store.findAnyById(id)).toMatchObject({ provider: "backup", routing_passed: [queued] });
    // The first provider holds a tombstone for the key: its late create is refused there.
    expect(await heldAt(id, queued)).toMatchObject({ status: "withdrawn", decision: "declined" });
  }, 30_000);

  it("stays with a provider that cannot confirm a withdrawal: 503 with the reserve held, and the next provider never receives it", async () => {
    const queued = await queuedProvider(60_000, "unsupported");
    const shop = await h.shop([queued, "backup"]);
    const req = request(shop, { type: "payout", number: "4111111111111111" });
    const { info } = await failureOf(h.operations.createOperation(req));
    expect(info?.code).toBe("dependency_unavailable");
    const id = operationIdFor(shop.shopId, req.merchantOperationId);
    expect(await h.store.findAnyById(id)).toMatchObject({
      status: "routing",
      routing_unresolved: queued,
      routing_passed: [],
    });
    expect(await heldAt(id, "backup")).toBeUndefined();
    const [reserve] = await h.sql<{ state: string }[]>`
      select state from ledger.payout_reserves where operation_id = ${id}`;
    expect(reserve?.state).toBe("reserved");
  }, 30_000);
});

describe("a routing row taken over by another driver", () => {
  it("is not recorded by the driver that lost it: that one answers 503 and the row stays with the new driver", async () => {
    const shop = await h.shop(["backup"]);
    const req = request(shop);
    const id = await insertAbandonedRouting(h.store, shop, req);
    const abandoned = await h.store.findAnyById(id);
    if (!abandoned) throw new Error("row vanished");
    // Driver A takes the row over, then stalls past its own deadline and grace ...
    const a = await h.store.takeOverRouting(abandoned, 60_000, 5_000);
    if (!a) throw new Error("driver A did not get the row");
    await h.sql`
      update operations.operations set routing_deadline = now() - interval '1 hour' where id = ${id}`;
    const stale = await h.store.findAnyById(id);
    if (!stale) throw new Error("row vanished");
    // ... so driver B takes it over in turn.
    const b = await h.store.takeOverRouting(stale, 60_000, 5_000);
    if (!b) throw new Error("driver B did not get the row");

    const deps: CreateDeps = {
      store: h.store,
      ledger: h.ledger,
      connectorFor,
      callbackBaseUrl: h.config.PROVIDER_CALLBACK_BASE_URL,
      budgetMs: 8_000,
      attemptTimeoutMs: 1_000,
      logger: createLogger("operations-test", "silent"),
    };
    const lost = await drive(deps, a, Date.now() + 8_000, AbortSignal.timeout(8_000)).catch(
      (e: unknown) => e,
    );
    expect(lost).toBeInstanceOf(DependencyUnavailableError);
    const row = await h.store.findAnyById(id);
    expect(row).toMatchObject({ status: "routing", provider: null });
    expect(row?.routing_deadline?.getTime()).toBe(b.routing_deadline?.getTime());
  });
});
