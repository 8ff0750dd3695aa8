import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Client } from "@connectrpc/connect";
import { connect, createTestDatabase, type Sql } from "@gw/db";
import { startLedger } from "@gw/ledger";
import { configSchema as ledgerConfig } from "@gw/ledger/config";
import { createLogger, type Logger } from "@gw/log";
import { startMatching } from "@gw/matching";
import { configSchema as matchingConfig } from "@gw/matching/config";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { OperationsService } from "@gw/proto/gateway/operations/v1/operations_pb";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { startReceipts } from "@gw/receipts";
import { configSchema as receiptsConfig } from "@gw/receipts/config";
import { createServiceClient } from "@gw/rpc";
import type { RunningService } from "@gw/runtime";
import { configSchema as sandboxConfig, startSandbox } from "@gw/sandbox-provider";
import { eventually, failureOf } from "@gw/testkit";
import { startOperations } from "../src/app.ts";
import { configSchema, type OperationsConfig } from "../src/config.ts";
import { connectorFor } from "../src/connectors/index.ts";
import { operationIdFor, parseCreate, requestHash } from "../src/create.ts";
import { Reconciler, type ReconcilerOptions, reconcilerOptions } from "../src/reconciler.ts";
import { type OperationStore, PgOperationStore } from "../src/repository/operations.ts";

// Operations' test harness: its own tests, and other packages through
// `@gw/operations/testing` (checkout's pages over a real operations).

export { eventually, failureOf };

/** The receipts service's link secret in the harness. */
export const RECEIPT_URL_SECRET = "operations-test-receipt-url-secret-0123456789";

/**
 * What the callback forwarder does with a provider callback: pass it to operations,
 * refuse it with a 503 (the sandbox retries later), or hold it unanswered until
 * `releaseCallbacks()`.
 */
export type CallbackMode = "forward" | "refuse" | "hold";

export interface OperationsHarness {
  operations: Client<typeof OperationsService>;
  ledger: Client<typeof LedgerService>;
  /** The self-matching pool service operations routes `self_matching` to. */
  matching: Client<typeof MatchingService>;
  sandboxUrl: string;
  /** Configures a sandbox provider in the sandbox and registers it with operations. */
  provider(name: string, payin: Record<string, unknown>, payout?: Record<string, unknown>): Promise<void>;
  /** A new shop id with a route through `providers` and zero-fee pricing, or the given one. */
  shop(
    providers: string[],
    pricing?: { percent: string; fixed: string },
  ): Promise<{ shopId: string; merchantId: string }>;
  settle(operationId: string, body: Record<string, unknown>): Promise<Response>;
  /** How the forwarder standing for the edge treats provider callbacks from now on. */
  callbacks(mode: CallbackMode): void;
  /** Callbacks held so far (mode `hold`). */
  readonly held: number;
  /** Forwards every held callback to operations; resolves when all were answered. */
  releaseCallbacks(): Promise<void>;
  /** The operations service's config, as started. */
  config: OperationsConfig;
  /** The receipts service operations calls (signing links with `RECEIPT_URL_SECRET`). */
  receipts: RunningService;
  /** A store on a pool of its own, for reading and seeding rows. */
  store: OperationStore;
  /** The store's connection, for tests that read or seed rows the repository has no function for. */
  sql: Sql;
  /**
   * Another reconciler over its own pool, as another replica would run it (not started:
   * call `runOnce()`); closed by `stop()`.
   */
  reconciler(options?: Partial<ReconcilerOptions>, logger?: Logger): Reconciler;
  stop(): Promise<void>;
}

/**
 * Starts real ledger, sandbox-provider and operations services on port 0 against a fresh
 * database and a fresh event prefix. Provider callbacks reach operations through a small
 * HTTP forwarder standing where the edge stands in the full stack.
 */
export async function startHarness(
  options: {
    budgetMs?: number;
    attemptTimeoutMs?: number;
    /** More operations settings (`RECONCILE_*`, for example). */
    config?: Record<string, string>;
    /** More matching settings (`POOL_SWEEP_INTERVAL_MS`, for example). */
    matchingConfig?: Record<string, string>;
  } = {},
): Promise<OperationsHarness> {
  const database = await createTestDatabase();
  const prefix = `t_${randomBytes(4).toString("hex")}`;
  const common = {
    DATABASE_URL: database.url,
    EVENTS_PREFIX: prefix,
    GRPC_PORT: "0",
    METRICS_PORT: "0",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    // Every harness and e2e stack of a test run shares one Postgres of 100 connections.
    DB_POOL_MAX: "4",
  };
  const ledgerSvc = await startLedger(ledgerConfig.parse(common));
  // A small pool: most tests never route to the pool, and every harness shares one Postgres.
  const matchingSvc = await startMatching(
    matchingConfig.parse({ ...common, DB_POOL_MAX: "3", ...options.matchingConfig }),
  );
  const matchingUrl = `http://127.0.0.1:${matchingSvc.port}`;
  const receiptsSvc = await startReceipts(
    receiptsConfig.parse({
      ...common,
      RECEIPT_URL_SECRET: RECEIPT_URL_SECRET,
      RECEIPT_URL_BASE: "http://127.0.0.1:8080",
    }),
  );
  const sandbox = await startSandbox(
    sandboxConfig.parse({
      DATABASE_URL: database.url,
      DB_POOL_MAX: "3",
      HTTP_PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: "silent",
      CALLBACK_RETRY_BASE_MS: "100",
    }),
  );
  let mode: CallbackMode = "forward";
  const held: (() => Promise<void>)[] = [];
  const forwarder: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const name = decodeURIComponent(req.url?.split("/").pop() ?? "");
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
    const forward = async () => {
      try {
        await operations.handleProviderCallback({ provider: name, body: Buffer.concat(chunks), headers });
        res.writeHead(200).end('{"ok":true}');
      } catch (err) {
        res.writeHead(401).end(String(err));
      }
    };
    if (mode === "refuse") res.writeHead(503).end("refused by the test");
    else if (mode === "hold") held.push(forward);
    else await forward();
  });
  const callbackBase = await new Promise<string>((resolve) => {
    forwarder.listen(0, "127.0.0.1", () =>
      resolve(`http://127.0.0.1:${(forwarder.address() as AddressInfo).port}`),
    );
  });
  const ledgerUrl = `http://127.0.0.1:${ledgerSvc.port}`;
  const config = configSchema.parse({
    ...common,
    LEDGER_URL: ledgerUrl,
    MATCHING_URL: matchingUrl,
    RECEIPTS_URL: `http://127.0.0.1:${receiptsSvc.port}`,
    PROVIDER_CALLBACK_BASE_URL: callbackBase,
    CREATE_BUDGET_MS: String(options.budgetMs ?? 15_000),
    PROVIDER_ATTEMPT_TIMEOUT_MS: String(options.attemptTimeoutMs ?? 5_000),
    ...options.config,
  });
  const opsSvc = await startOperations(config);
  const operations = createServiceClient(OperationsService, `http://127.0.0.1:${opsSvc.port}`, {
    defaultTimeoutMs: 20_000,
  });
  const ledger = createServiceClient(LedgerService, ledgerUrl);
  const sandboxUrl = `http://127.0.0.1:${sandbox.port}`;
  const credentials = (name: string) => `secret-${name}-${prefix}-0123456789`;
  const pools: { end(): Promise<void> }[] = [];
  const pool = () => {
    const { sql } = connect(database.url, { max: 4, application: "operations-test" });
    pools.push(sql);
    return sql;
  };
  const sql = pool();
  const store = new PgOperationStore(sql, prefix);

  return {
    operations,
    ledger,
    matching: createServiceClient(MatchingService, matchingUrl),
    sandboxUrl,
    config,
    store,
    sql,
    receipts: receiptsSvc,
    callbacks(next) {
      mode = next;
    },
    get held() {
      return held.length;
    },
    async releaseCallbacks() {
      await Promise.all(held.splice(0).map((forward) => forward()));
    },
    reconciler(overrides = {}, logger = createLogger("operations-test", "silent")) {
      const own = new PgOperationStore(pool(), prefix);
      return new Reconciler(
        {
          store: own,
          ledger,
          connectorFor,
          callbackBaseUrl: callbackBase,
          budgetMs: config.CREATE_BUDGET_MS,
          attemptTimeoutMs: config.PROVIDER_ATTEMPT_TIMEOUT_MS,
          logger,
          receipts: createServiceClient(ReceiptsService, config.RECEIPTS_URL),
          pool: {
            store: own,
            matching: createServiceClient(MatchingService, matchingUrl),
            connectorFor,
            callbackBaseUrl: callbackBase,
            attemptTimeoutMs: config.PROVIDER_ATTEMPT_TIMEOUT_MS,
            slotLifetimeMs: config.POOL_SLOT_LIFETIME_MS,
            windowMs: config.POOL_WINDOW_MS,
            logger,
          },
        },
        { ...reconcilerOptions(config), ...overrides },
      );
    },
    async provider(name, payin, payout = { mode: "accept" }) {
      const res = await fetch(`${sandboxUrl}/control/providers/${name}`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ credentials: credentials(name), payin, payout }),
      });
      if (!res.ok) throw new Error(`sandbox provider: ${res.status} ${await res.text()}`);
      await operations.putProvider({
        name,
        kind: "sandbox",
        baseUrl: sandboxUrl,
        credentials: credentials(name),
        methods: ["WT_RUB_C2C", "WT_RUB_PHONE"],
      });
    },
    async shop(providers, pricing = { percent: "0", fixed: "0" }) {
      const shopId = crypto.randomUUID();
      const merchantId = crypto.randomUUID();
      for (const method of ["WT_RUB_C2C", "WT_RUB_PHONE"]) {
        await operations.putRoute({
          shopId,
          method,
          payin: providers,
          payout: providers,
          settlementCurrency: "RUB",
        });
        const tier = { minAmount: "0.01", maxAmount: "10000000.00", ...pricing };
        await ledger.putPricing({ shopId, method, payin: [tier], payout: [tier] });
      }
      return { shopId, merchantId };
    },
    settle(operationId, body) {
      return fetch(`${sandboxUrl}/control/operations/${operationId}/settle`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    },
    async stop() {
      mode = "refuse";
      await Promise.all(held.splice(0).map((forward) => forward()));
      await opsSvc.stop();
      await Promise.all(pools.map((p) => p.end()));
      await sandbox.stop();
      await receiptsSvc.stop();
      await matchingSvc.stop();
      await ledgerSvc.stop();
      await new Promise((r) => forwarder.close(r));
      await database.drop();
    },
  };
}

export { forceTransition } from "../src/repository/force-transition.ts";

/**
 * Inserts the `routing` row a create leaves when its process dies mid-routing (no
 * provider recorded), with `routingDeadline` as that create set it and any further
 * `columns` (a cascade position, say); returns its id.
 */
export async function insertAbandonedRouting(
  store: OperationStore,
  shop: { shopId: string; merchantId: string },
  req: { merchantOperationId: string } & Record<string, unknown>,
  routingDeadline = new Date(Date.now() - 60_000),
  columns: Partial<Parameters<OperationStore["insert"]>[0]> = {},
): Promise<string> {
  const input = parseCreate(req as unknown as Parameters<typeof parseCreate>[0]);
  const id = operationIdFor(shop.shopId, req.merchantOperationId);
  await store.insert({
    id,
    shop_id: shop.shopId,
    merchant_id: shop.merchantId,
    merchant_operation_id: req.merchantOperationId,
    request_hash: requestHash(input),
    type: input.type,
    status: "routing",
    method: input.method,
    currency: input.currency,
    expected_amount: input.amount,
    client_id: input.clientId,
    ...(input.type === "payout" ? { number: input.number ?? null, name: input.name ?? null } : {}),
    settlement_currency: "RUB",
    commission_percent: "0",
    commission_fixed: "0",
    routing_deadline: routingDeadline,
    ...columns,
  });
  return id;
}
