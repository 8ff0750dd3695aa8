import { fileURLToPath } from "node:url";
import { inboxRetention, resolvedDeadLetterRetention } from "@gw/db";
import { DeadLetterHandlers, EventHealthHandlers, OutboxRelay, type RunningConsumer } from "@gw/events";
import { DeadLetterService } from "@gw/proto/gateway/deadletters/v1/dead_letters_pb";
import { EventHealthService } from "@gw/proto/gateway/events/v1/event_health_pb";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { OperationsService } from "@gw/proto/gateway/operations/v1/operations_pb";
import { ProviderFactsService } from "@gw/proto/gateway/operations/v1/provider_facts_pb";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { createServiceClient } from "@gw/rpc";
import { startGrpcService } from "@gw/runtime";
import type { OperationsConfig } from "./config.ts";
import { connectorRegistry } from "./connectors/index.ts";
import { withErrorCatalogue } from "./domain/lifecycle/catalogue.ts";
import { ephemeralLinkSecret } from "./domain/link-credential.ts";
import { OperationsHandlers } from "./handlers.ts";
import { ProviderFactsHandlers } from "./provider-facts-handlers.ts";
import { PgOperationStore } from "./repository/operations.ts";
import { HandOffDriver } from "./steps/handoff.ts";
import { SELF_MATCHING } from "./steps/pool.ts";
import { PoolConnector } from "./steps/pool-connector.ts";
import type { PoolDeps } from "./steps/pool-deps.ts";
import { nobodyTookIt } from "./steps/pool-payouts.ts";
import { Pricing } from "./steps/pricing.ts";
import { reportOpenProviderFacts } from "./steps/provider-facts.ts";
import { RouteCache } from "./steps/route-cache.ts";
import { startWithdrawalConsumer, WithdrawalDriver, withdrawalApplier } from "./steps/withdrawals.ts";
import { poolConsumers, startPoolConsumers } from "./usecases/pool-events.ts";
import { reconcilerOptions } from "./usecases/reconcile/options.ts";
import { Reconciler } from "./usecases/reconcile/reconciler.ts";

export const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

/** Builds and starts the operations service; `main.ts` and the tests both call this. */
export function startOperations(config: OperationsConfig) {
  return startGrpcService({
    name: "operations",
    schema: "operations",
    migrationsFolder,
    serviceNames: [
      OperationsService.typeName,
      DeadLetterService.typeName,
      ProviderFactsService.typeName,
      EventHealthService.typeName,
    ],
    config,
    setup: ({ sql, nats, logger, retry }) => {
      const store = new PgOperationStore(sql, config.EVENTS_PREFIX, {
        maxBatch: config.WRITE_BATCH_MAX,
        stallMs: config.WRITE_BATCH_STALL_MS,
      });
      reportOpenProviderFacts(store);
      const ledger = createServiceClient(LedgerService, config.LEDGER_URL);
      const pricing = Pricing.cached(
        ledger,
        nats.nc,
        config.EVENTS_PREFIX,
        logger.child({ component: "pricing" }),
      );
      const routes = new RouteCache(
        store,
        nats.nc,
        config.EVENTS_PREFIX,
        logger.child({ component: "routes" }),
      );
      const relay = new OutboxRelay({ sql, schema: "operations", js: nats.js, logger });
      const callbackBaseUrl = config.PROVIDER_CALLBACK_BASE_URL.replace(/\/+$/, "");
      const pool: PoolDeps = {
        store,
        matching: createServiceClient(MatchingService, config.MATCHING_URL),
        connectorFor: (kind) => connectorFor(kind),
        callbackBaseUrl,
        attemptTimeoutMs: config.PROVIDER_ATTEMPT_TIMEOUT_MS,
        slotLifetimeMs: config.POOL_SLOT_LIFETIME_MS,
        windowMs: config.POOL_WINDOW_MS,
        logger: logger.child({ component: "pool" }),
      };
      // The pool is one more provider behind the connector port (kind `self_matching`).
      const connectorFor = connectorRegistry({ [SELF_MATCHING]: new PoolConnector(pool) });
      const withdrawals = new WithdrawalDriver(
        { store, connectorFor, logger: logger.child({ component: "withdrawals" }) },
        {
          attempts: config.WITHDRAW_ATTEMPTS,
          backoffMs: config.WITHDRAW_BACKOFF_MS,
          backoffMaxMs: config.RECONCILE_BACKOFF_MAX_MS,
          intervalMs: config.WITHDRAW_INTERVAL_MS,
          batchSize: 32,
          attemptTimeoutMs: config.PROVIDER_ATTEMPT_TIMEOUT_MS,
        },
      );
      const deps = {
        store,
        ledger,
        pricing,
        routes,
        connectorFor,
        callbackBaseUrl,
        budgetMs: config.CREATE_BUDGET_MS,
        attemptTimeoutMs: config.PROVIDER_ATTEMPT_TIMEOUT_MS,
        logger,
        pool,
        withdrawals,
      };
      const handOffs = new HandOffDriver(
        pool,
        {
          attempts: config.POOL_HANDOFF_ATTEMPTS,
          backoffMs: config.POOL_HANDOFF_BACKOFF_MS,
          backoffMaxMs: config.POOL_HANDOFF_BACKOFF_MAX_MS,
          intervalMs: config.POOL_HANDOFF_INTERVAL_MS,
          batchSize: 32,
        },
        SELF_MATCHING,
        (tx, row) => nobodyTookIt(pool, tx, row),
      );
      let consumers: RunningConsumer[] = [];
      const receipts = createServiceClient(ReceiptsService, config.RECEIPTS_URL);
      if (!config.FLEXIBLE_LINK_SECRET)
        logger.warn("FLEXIBLE_LINK_SECRET is not set: flexible link credentials change with every restart");
      const handlers = new OperationsHandlers({
        ...deps,
        receipts,
        prefix: config.EVENTS_PREFIX,
        matching: pool.matching,
        linkLifetimeMs: config.FLEXIBLE_LINK_LIFETIME_MS,
        linkSecret: config.FLEXIBLE_LINK_SECRET
          ? Buffer.from(config.FLEXIBLE_LINK_SECRET, "utf8")
          : ephemeralLinkSecret(),
      });
      const reconciler = new Reconciler(
        { ...deps, receipts, logger: logger.child({ component: "reconciler" }) },
        reconcilerOptions(config),
      );
      const appliers = [...Object.values(poolConsumers(pool)).map((c) => c.applier), withdrawalApplier];
      const deadLetters = new DeadLetterHandlers({
        service: "operations",
        sql,
        schema: "operations",
        consumers: appliers,
      });
      const eventHealth = new EventHealthHandlers({
        service: "operations",
        sql,
        outboxSchema: "operations",
        nats,
        prefix: config.EVENTS_PREFIX,
        durables: appliers.map((a) => a.durable),
      });
      return {
        // Consumed-event ids and resolved dead letters (docs/operations.md, "Retention").
        retention: [inboxRetention("operations"), resolvedDeadLetterRetention("operations")],
        routes: (router) => {
          // Domain errors become Connect errors here, once, through the catalogue.
          router.service(OperationsService, withErrorCatalogue(OperationsService, handlers, logger));
          router.service(DeadLetterService, deadLetters);
          router.service(EventHealthService, eventHealth);
          router.service(
            ProviderFactsService,
            withErrorCatalogue(ProviderFactsService, new ProviderFactsHandlers({ store, logger }), logger),
          );
        },
        start: async () => {
          await pricing.start();
          await routes.start();
          await relay.start();
          consumers = await startPoolConsumers(pool, nats, sql, config.EVENTS_PREFIX, retry);
          await handOffs.start();
          consumers.push(
            await startWithdrawalConsumer({ nats, prefix: config.EVENTS_PREFIX, sql, logger, retry }),
          );
          await withdrawals.start();
          if (config.RECONCILE_INTERVAL_MS > 0) reconciler.start();
        },
        stop: async () => {
          await reconciler.stop();
          await handOffs.stop();
          await withdrawals.stop();
          await Promise.all(consumers.map((c) => c.stop()));
          await relay.stop();
          pricing.stop();
          routes.stop();
        },
      };
    },
  });
}
