import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import type { Client } from "@connectrpc/connect";
import { connect, type Database, migrateSchema } from "@gw/db";
import { connectNats } from "@gw/events";
import { createLogger } from "@gw/log";
import { DeadLetterService } from "@gw/proto/gateway/deadletters/v1/dead_letters_pb";
import { EventHealthService } from "@gw/proto/gateway/events/v1/event_health_pb";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { OperationsService } from "@gw/proto/gateway/operations/v1/operations_pb";
import { ProviderFactsService } from "@gw/proto/gateway/operations/v1/provider_facts_pb";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { WebhooksService } from "@gw/proto/gateway/webhooks/v1/webhooks_pb";
import { Health, HealthCheckResponse_ServingStatus } from "@gw/proto/grpc/health/v1/health_pb";
import { createServiceClient, startMetricsServer } from "@gw/rpc";
import { closeConnectionsWithUnreadBodies } from "@gw/runtime";
import { createAdaptorServer } from "@hono/node-server";
import { OpenAPIHono } from "@hono/zod-openapi";
import { methodNotAllowed } from "hono/method-not-allowed";
import { requestId } from "hono/request-id";
import { Admission, admissionControl, DEFAULT_ADMISSION } from "./admission.ts";
import type { EdgeConfig } from "./config.ts";
import type { EdgeClients, EdgeDeps, Probe } from "./deps.ts";
import type { EdgeEnv } from "./env.ts";
import { ApiError, errorResponse, loggableCause, notFound, toApiError } from "./errors.ts";
import { KeyCache } from "./key-cache.ts";
import { adminAuth } from "./middleware/admin-auth.ts";
import { apiKeyAuth } from "./middleware/api-key.ts";
import { jsonBody } from "./middleware/body.ts";
import { edgeBodyLimits } from "./middleware/body-limits.ts";
import { requestLog } from "./middleware/request-log.ts";
import { traceRequests } from "./middleware/tracing.ts";
import { describeUnmanagedRoutes } from "./openapi.ts";
import { referenceDocument } from "./reference/document.ts";
import { adminAuditRoutes } from "./routes/admin-audit.ts";
import { adminConfigRoutes } from "./routes/admin-config.ts";
import { adminDeadLetterRoutes } from "./routes/admin-dead-letters.ts";
import { adminDirectoryRoutes } from "./routes/admin-directory.ts";
import { adminOperationRoutes } from "./routes/admin-operations.ts";
import { adminOperatorQueueRoutes } from "./routes/admin-operator-queue.ts";
import { adminProviderFactRoutes } from "./routes/admin-provider-facts.ts";
import { adminReadRoutes } from "./routes/admin-reads.ts";
import { adminReceiptRoutes } from "./routes/admin-receipt.ts";
import { adminReviewRoutes } from "./routes/admin-reviews.ts";
import { adminShopRoutes } from "./routes/admin-shops.ts";
import { availabilityRoutes } from "./routes/availability.ts";
import { balanceRoutes } from "./routes/balances.ts";
import { callbackRoutes } from "./routes/callbacks.ts";
import { docsRoutes } from "./routes/docs.ts";
import { flexibleLinkRoutes } from "./routes/flexible.ts";
import { healthRoutes } from "./routes/health.ts";
import { operationRoutes } from "./routes/operations.ts";
import {
  CONFIRM_PATH,
  confirmRoutes,
  describeReceiptRoutes,
  receiptDownloadRoutes,
} from "./routes/receipts.ts";
import { EdgeStore } from "./store.ts";
import { validationError } from "./validation.ts";

export const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

/**
 * Builds the edge's HTTP app without listening. The order of middleware is the order of
 * the spec's checks: request id, log, then per area the credentials (API key or admin
 * token) before anything reads the body, then the JSON body, then the route. The body
 * limit of every route comes before all of these (middleware/body-limits.ts).
 */
export function buildApp(deps: EdgeDeps): OpenAPIHono<EdgeEnv> {
  const store = new EdgeStore(deps.db, deps.keyCache);
  const app = new OpenAPIHono<EdgeEnv>({
    defaultHook: (result) => {
      if (!result.success) throw validationError(result.error);
    },
  });

  app.use(requestId());
  app.use(traceRequests());
  app.use(requestLog(deps.logger));
  const receiptMaxBytes = deps.receiptMaxBytes ?? 20 * 1024 * 1024;
  // Every route's body limit, before any credential check or handler reads a byte.
  app.use(edgeBodyLimits(receiptMaxBytes));
  app.use(
    methodNotAllowed({
      app,
      onMethodNotAllowed: (c, methods) =>
        errorResponse(c, new ApiError(405, "method_not_allowed", `${c.req.method} is not allowed here`), {
          Allow: methods.join(", "),
        }),
    }),
  );
  // confirm_payment reads its own multipart body (bounded by the receipt limit) after the key check.
  const v1Json = jsonBody();
  // Overload is shed first, before the key lookup costs a query: 503 with Retry-After, or
  // 429 for a key that already holds its share of the slots (fair admission between shops).
  app.use("/v1/*", admissionControl(new Admission(deps.admission ?? DEFAULT_ADMISSION)));
  app.use("/v1/*", apiKeyAuth(store), (c, next) => (c.req.path === CONFIRM_PATH ? next() : v1Json(c, next)));
  app.use("/admin/*", adminAuth(deps.adminToken), jsonBody());
  // Every admin route under a shop answers 404 for a shop the edge does not know.
  app.use("/admin/v1/shops/:shop_id/*", async (c, next) => {
    if (!(await store.shopExists(c.req.param("shop_id")))) throw notFound("shop not found");
    await next();
  });

  app.route("/", healthRoutes(deps.probes));
  app.route("/v1", operationRoutes(deps.clients, store, deps.payUrl));
  app.route("/v1", balanceRoutes(deps.clients));
  app.route("/v1", availabilityRoutes(deps.clients));
  app.route("/v1", flexibleLinkRoutes(deps.clients, store, deps.payUrl));
  app.route("/v1", confirmRoutes(deps.clients, receiptMaxBytes));
  app.route("/receipts", receiptDownloadRoutes(deps.clients, store));
  app.route("/callbacks", callbackRoutes(deps.clients));
  app.route("/admin/v1", adminDirectoryRoutes(deps.db));
  app.route("/admin/v1", adminOperationRoutes(deps.clients));
  app.route("/admin/v1", adminOperatorQueueRoutes(deps.clients));
  app.route("/admin/v1", adminShopRoutes(store, deps.clients));
  app.route("/admin/v1", adminConfigRoutes(deps.clients));
  app.route("/admin/v1", adminReviewRoutes(deps.clients));
  app.route("/admin/v1", adminDeadLetterRoutes(deps.clients));
  app.route("/admin/v1", adminProviderFactRoutes(deps.clients));
  app.route("/admin/v1", adminReadRoutes(deps.clients));
  app.route("/admin/v1", adminReceiptRoutes(deps.clients));
  app.route("/admin/v1", adminAuditRoutes(deps.clients));
  describeUnmanagedRoutes(app);
  describeReceiptRoutes(app, receiptMaxBytes);
  app.route(
    "/",
    docsRoutes(() => referenceDocument(app)),
  );

  app.notFound((c) =>
    errorResponse(c, new ApiError(404, "not_found", `no route for ${c.req.method} ${c.req.path}`)),
  );
  app.onError((err, c) => {
    const { error, expected } = toApiError(err);
    if (!expected) {
      deps.logger.error(
        { err: loggableCause(err), request_id: c.get("requestId"), status: error.status },
        "request failed",
      );
    }
    return errorResponse(c, error);
  });
  return app;
}

/** A probe over grpc.health.v1: SERVING within the deadline, or down. */
export function grpcHealthProbe(client: Client<typeof Health>, timeoutMs = 1_000): Probe {
  return async () => {
    const res = await client.check({ service: "" }, { timeoutMs });
    return res.status === HealthCheckResponse_ServingStatus.SERVING;
  };
}

export interface RunningEdge {
  port: number;
  metricsPort: number;
  stop(): Promise<void>;
}

/**
 * Starts the edge: Postgres (migrated under the advisory lock), NATS (for health), the
 * downstream clients, the HTTP server and the metrics server. `stop()` stops taking
 * requests, waits for those in flight, then closes NATS and the pool.
 */
export async function startEdge(
  config: EdgeConfig,
  overrides: { clients?: EdgeClients } = {},
): Promise<RunningEdge> {
  const logger = createLogger("edge", config.LOG_LEVEL);
  const { sql, db } = connect(config.DATABASE_URL, { max: config.DB_POOL_MAX, application: "edge" });
  await migrateSchema(sql, db as Database, "edge", migrationsFolder);
  const nats = await connectNats(config.NATS_URL, "edge");
  const keyCache = new KeyCache(nats.nc, config.EVENTS_PREFIX, logger);
  await keyCache.start();

  const clients: EdgeClients = overrides.clients ?? {
    operations: createServiceClient(OperationsService, config.OPERATIONS_URL),
    providerFacts: createServiceClient(ProviderFactsService, config.OPERATIONS_URL),
    ledger: createServiceClient(LedgerService, config.LEDGER_URL),
    webhooks: createServiceClient(WebhooksService, config.WEBHOOKS_URL),
    receipts: createServiceClient(ReceiptsService, config.RECEIPTS_URL),
    matching: createServiceClient(MatchingService, config.MATCHING_URL),
    deadLetters: {
      operations: createServiceClient(DeadLetterService, config.OPERATIONS_URL),
      ledger: createServiceClient(DeadLetterService, config.LEDGER_URL),
      webhooks: createServiceClient(DeadLetterService, config.WEBHOOKS_URL),
    },
    eventHealth: {
      operations: createServiceClient(EventHealthService, config.OPERATIONS_URL),
      ledger: createServiceClient(EventHealthService, config.LEDGER_URL),
      matching: createServiceClient(EventHealthService, config.MATCHING_URL),
      webhooks: createServiceClient(EventHealthService, config.WEBHOOKS_URL),
    },
  };
  const downstreamUrls = {
    operations: config.OPERATIONS_URL,
    ledger: config.LEDGER_URL,
    webhooks: config.WEBHOOKS_URL,
    matching: config.MATCHING_URL,
    receipts: config.RECEIPTS_URL,
  };
  const downstream: Record<string, Probe> = {};
  for (const [name, url] of Object.entries(downstreamUrls)) {
    downstream[name] = grpcHealthProbe(createServiceClient(Health, url, { defaultTimeoutMs: 1_000 }));
  }

  const app = buildApp({
    db,
    keyCache,
    logger,
    clients,
    adminToken: config.ADMIN_TOKEN,
    payUrl: config.PAY_URL,
    receiptMaxBytes: config.RECEIPT_STORE_MAX_BYTES,
    admission: {
      maxInFlight: config.MAX_IN_FLIGHT,
      maxQueue: config.MAX_QUEUE,
      queueTimeoutMs: config.QUEUE_TIMEOUT_MS,
      maxInFlightPerKey: Math.min(config.MAX_IN_FLIGHT_PER_KEY, config.MAX_IN_FLIGHT),
    },
    probes: {
      self: {
        postgres: async () => {
          await sql`select 1`;
          return true;
        },
        nats: async () => {
          if (nats.nc.isClosed()) return false;
          await nats.nc.flush();
          return true;
        },
      },
      downstream,
    },
  });

  const server = closeConnectionsWithUnreadBodies(
    createAdaptorServer({ fetch: app.fetch, hostname: config.HOST }) as Server,
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.PORT, config.HOST, () => resolve());
  });
  const metrics = await startMetricsServer(config.METRICS_PORT, config.HOST);
  const port = (server.address() as AddressInfo).port;
  const metricsPort = (metrics.address() as AddressInfo).port;
  logger.info({ port, metricsPort }, "edge listening");

  let stopping: Promise<void> | undefined;
  return {
    port,
    metricsPort,
    stop() {
      stopping ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        keyCache.stop();
        await nats.nc.drain().catch(() => {});
        await sql.end({ timeout: 5 });
        await new Promise((r) => metrics.close(r));
        logger.info("edge stopped");
      })();
      return stopping;
    },
  };
}
