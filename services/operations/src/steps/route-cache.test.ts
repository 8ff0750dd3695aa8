import { randomUUID } from "node:crypto";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { connect } from "@gw/db";
import { connectNats, type Nats } from "@gw/events";
import { createLogger } from "@gw/log";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { OperationsService } from "@gw/proto/gateway/operations/v1/operations_pb";
import { createServiceClient } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, type OperationsHarness, startHarness } from "../../test/harness.ts";
import { startOperations } from "../app.ts";
import { connectorFor } from "../connectors/index.ts";
import { operationIdFor, parseCreate } from "../domain/create-request.ts";
import { IdempotencyConflictError } from "../domain/lifecycle/errors.ts";
import { PgOperationStore } from "../repository/operations.ts";
import { type CreateDeps, claimAndRoute } from "./create.ts";
import { Pricing } from "./pricing.ts";
import { RouteCache } from "./route-cache.ts";

let h: OperationsHarness;
let nats: Nats;
const logger = createLogger("route-cache-test", "silent");

beforeAll(async () => {
  h = await startHarness({ budgetMs: 4_000, attemptTimeoutMs: 1_000 });
  await h.provider("acme", { mode: "accept", expires_in_seconds: 900 });
  await h.provider("beta", { mode: "accept", expires_in_seconds: 900 });
  nats = await connectNats(h.config.NATS_URL, "route-cache-test");
});
afterAll(async () => {
  await nats?.nc.close();
  await h?.stop();
});

const request = (shop: { shopId: string; merchantId: string }, mop: string) => ({
  scope: shop,
  type: "payment",
  merchantOperationId: mop,
  clientId: "client-1",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
});

/**
 * A create's deps as a replica runs them, with caches of its own (`pricing` over `ledger`,
 * the harness's by default) and a connection that records every statement it sends.
 */
async function cachedDeps(ledger = h.ledger) {
  const statements: string[] = [];
  const conn = connect(h.config.DATABASE_URL, { max: 2, onStatement: (q) => statements.push(q.trim()) });
  const store = new PgOperationStore(conn.sql, h.config.EVENTS_PREFIX);
  const pricing = Pricing.cached(ledger, nats.nc, h.config.EVENTS_PREFIX, logger);
  const routes = new RouteCache(store, nats.nc, h.config.EVENTS_PREFIX, logger);
  await pricing.start();
  await routes.start();
  const deps: CreateDeps = {
    store,
    ledger,
    pricing,
    routes,
    connectorFor,
    callbackBaseUrl: h.config.PROVIDER_CALLBACK_BASE_URL,
    budgetMs: h.config.CREATE_BUDGET_MS,
    attemptTimeoutMs: h.config.PROVIDER_ATTEMPT_TIMEOUT_MS,
    logger,
  };
  return {
    deps,
    statements,
    create: (shop: { shopId: string; merchantId: string }, mop: string) =>
      claimAndRoute(deps, parseCreate(request(shop, mop) as never), new AbortController().signal),
    stop: async () => {
      routes.stop();
      pricing.stop();
      await conn.sql.end();
    },
  };
}

/**
 * `cachedDeps` with a shop routed to acme whose route and pricing terms one create has
 * put into the caches, so the next create by the shop takes the cached claim.
 */
async function warmedDeps() {
  const deps = await cachedDeps();
  try {
    const shop = await h.shop(["acme"]);
    await deps.create(shop, `mop-${randomUUID()}`);
    return { ...deps, shop };
  } catch (err) {
    await deps.stop();
    throw err;
  }
}

describe("a create whose route is cached", () => {
  it("claims its key with its first statement, and answers a replay with that one statement", async () => {
    const { statements, create: createIn, shop, stop } = await warmedDeps();
    const create = (mop: string) => createIn(shop, mop);
    try {
      statements.length = 0;
      const mop = `mop-${randomUUID()}`;
      const { row, replayed } = await create(mop);
      expect({ status: row.status, provider: row.provider, replayed }).toEqual({
        status: "pending",
        provider: "acme",
        replayed: false,
      });
      // The claim, then the acceptance with its event: no read before the claim.
      expect(statements).toHaveLength(2);
      expect(statements[0]).toMatch(/^with guard as/);
      expect(statements[1]).toMatch(/^with upd as \(\s*update operations\.operations/);

      statements.length = 0;
      const replay = await create(mop);
      expect(replay).toEqual({ row, replayed: true });
      expect(statements).toHaveLength(1);
    } finally {
      await stop();
    }
  });

  it("routes by an admin change of a route or a provider made through another replica from the very next create", async () => {
    const other = await startOperations(h.config);
    const replica = createServiceClient(OperationsService, `http://127.0.0.1:${other.port}`);
    const providerOf = async (mop: string) => {
      await replica.createOperation(request(shop, mop));
      return (await h.store.findByMop(shop.shopId, mop))?.provider;
    };
    const shop = await h.shop(["acme"]);
    try {
      expect(await providerOf(`mop-${randomUUID()}`)).toBe("acme");
      // A route change through the harness's replica.
      await h.operations.putRoute({
        shopId: shop.shopId,
        method: "WT_RUB_C2C",
        payin: ["beta", "acme"],
        payout: [],
        settlementCurrency: "RUB",
      });
      expect(await providerOf(`mop-${randomUUID()}`)).toBe("beta");
      // A provider change through the same: beta no longer takes the method.
      const beta = await h.store.provider("beta");
      if (!beta) throw new Error("beta is not registered");
      await h.operations.putProvider({ ...beta, methods: ["WT_RUB_PHONE"] });
      expect(await providerOf(`mop-${randomUUID()}`)).toBe("acme");
    } finally {
      await other.stop();
    }
  });

  it("routes by a route changed behind the cache's back (its invalidation lost) from the very next create", async () => {
    const { create, statements, stop } = await cachedDeps();
    // A provider of its own: another test takes beta off the method.
    await h.provider("gamma", { mode: "accept", expires_in_seconds: 900 });
    const shop = await h.shop(["acme"]);
    try {
      expect((await create(shop, `mop-${randomUUID()}`)).row.provider).toBe("acme");
      // Written by hand: no invalidation is published, the cache still holds acme.
      await h.sql`update operations.routes set payin = ${["gamma", "acme"]}
                  where shop_id = ${shop.shopId} and method = 'WT_RUB_C2C'`;
      statements.length = 0;
      expect((await create(shop, `mop-${randomUUID()}`)).row.provider).toBe("gamma");
      // The cached route's claim was tried first and refused, then the route read again.
      expect(statements[0]).toMatch(/^with guard as/);
      expect(statements[1]).toMatch(/^select o\.\*/);
      // And from then on by the route read again.
      expect((await create(shop, `mop-${randomUUID()}`)).row.provider).toBe("gamma");
    } finally {
      await stop();
    }
  });

  it("answers a replay from the database, never asking a ledger whose terms it has not cached", async () => {
    const shop = await h.shop(["acme"]);
    const mop = `mop-${randomUUID()}`;
    const first = await cachedDeps();
    // A ledger that takes every call and never answers (hung, half-open).
    const asked: string[] = [];
    const sessions: http2.ServerHttp2Session[] = [];
    const hung = http2.createServer();
    hung.on("session", (session) => sessions.push(session));
    hung.on("stream", (_stream, headers) => asked.push(String(headers[":path"])));
    await new Promise<void>((resolve) => hung.listen(0, "127.0.0.1", resolve));
    const hungLedger = createServiceClient(
      LedgerService,
      `http://127.0.0.1:${(hung.address() as AddressInfo).port}`,
    );
    const replica = await cachedDeps(hungLedger);
    try {
      const { row } = await first.create(shop, mop);
      // The replica reads the route into its cache; its pricing cache has no terms.
      expect(await replica.create(shop, mop)).toEqual({ row, replayed: true });
      expect(asked).toEqual([]);
    } finally {
      await first.stop();
      await replica.stop();
      for (const session of sessions) session.destroy();
      hung.close();
    }
  });

  it("answers 412 for a key a flexible link holds, from its first statement", async () => {
    const { create, statements, shop, stop } = await warmedDeps();
    try {
      const mop = `mop-${randomUUID()}`;
      await h.sql`
        insert into operations.flexible_links (operation_id, shop_id, merchant_id, merchant_operation_id,
          request_hash, client_id, method, currency, recommended_amount, picker, k_hash, status, expires_at)
        values (${operationIdFor(shop.shopId, mop)}, ${shop.shopId}, ${shop.merchantId}, ${mop}, 'link body',
          'client', 'WT_RUB_C2C', 'RUB', '100.00', 'payer', 'k', 'amount_selection', now() + interval '1 hour')`;
      statements.length = 0;
      await expect(create(shop, mop)).rejects.toBeInstanceOf(IdempotencyConflictError);
      expect(statements).toHaveLength(1);
      expect(statements[0]).toMatch(/^with guard as/);
      expect(await h.store.findByMop(shop.shopId, mop)).toBeUndefined();
    } finally {
      await stop();
    }
  });

  it("answers as the row another request committed while its claim waited, which its snapshot could not see", async () => {
    const { create, shop, stop } = await warmedDeps();
    const mop = `mop-${randomUUID()}`;
    const { promise: insertedYet, resolve: inserted } = Promise.withResolvers<void>();
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    try {
      // Another request's claim of the same key with another body, held open.
      const other = h.sql.begin(async (tx) => {
        await tx`
          insert into operations.operations (id, shop_id, merchant_id, merchant_operation_id, request_hash,
            type, status, expected_amount, currency)
          values (${operationIdFor(shop.shopId, mop)}, ${shop.shopId}, ${shop.merchantId}, ${mop}, 'another body',
            'payment', 'routing', '1000.00', 'RUB')`;
        inserted();
        await released;
      });
      await insertedYet;
      const creating = create(shop, mop).then(
        () => undefined,
        (err: unknown) => err,
      );
      // The claim waits on the held row's key; its snapshot was taken before the commit.
      await eventually(
        () =>
          h.sql`select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database() and query ~ '^\\s*with guard as'`,
        (rows) => expect(rows).toHaveLength(1),
      );
      release();
      await other;
      expect(await creating).toBeInstanceOf(IdempotencyConflictError);
    } finally {
      release();
      await stop();
    }
  });

  it("completes a create as a cancelled payment, from its first statement, when a cancel by its key came first (cancel rule 5)", async () => {
    const { create, statements, shop, stop } = await warmedDeps();
    try {
      const mop = `mop-${randomUUID()}`;
      const cancel = await h.operations.cancelOperation({
        scope: shop,
        id: { case: "merchantOperationId", value: mop },
        reason: "",
      });
      expect(cancel.outcome).toBe("cancelled");
      statements.length = 0;
      const { row, replayed } = await create(shop, mop);
      expect(statements[0]).toMatch(/^with guard as/);
      expect({ status: row.status, provider: row.provider, number: row.number, replayed }).toEqual({
        status: "cancelled",
        provider: null,
        number: null,
        replayed: false,
      });
    } finally {
      await stop();
    }
  });
});
