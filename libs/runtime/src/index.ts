import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { commonConfig, port } from "@gw/config";
import { connect, type Database, migrateSchema, type Sql } from "@gw/db";
import { connectNats, ensureStream, type Nats, type RetryPolicy } from "@gw/events";
import { createLogger, type Logger } from "@gw/log";
import { MAX_CONNECTION_AGE_MS, runAsService, startGrpcServer, startMetricsServer } from "@gw/rpc";
import { z } from "zod";
import { businessMetricsInterceptor } from "./business-metrics.ts";
import { serviceIdentity, startTelemetry } from "./telemetry.ts";

export {
  type BodyLimitOptions,
  type BodyLimitRule,
  bodyLimit,
  bodyLimitOf,
} from "./body-limit.ts";
export { businessMetricsInterceptor, operationCreates, receiptVerdicts } from "./business-metrics.ts";
export {
  type PlatformSettings,
  serviceIdentity,
  serviceKeys,
  startTelemetry,
  type Telemetry,
  type TelemetryOptions,
  withTelemetry,
} from "./telemetry.ts";
export { closeConnectionsWithUnreadBodies, LINGER_MS } from "./unread-body.ts";

/** Settings of every gRPC service: the common ones plus its two ports. */
export const grpcServiceConfig = (grpcPort: number, metricsPort: number) =>
  z.object({
    ...commonConfig,
    GRPC_PORT: port(grpcPort),
    METRICS_PORT: port(metricsPort),
    DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
    /** Client sessions are asked to reconnect after this long (±10 %), so balancers spread them; 0: never. */
    GRPC_MAX_CONNECTION_AGE_MS: z.coerce.number().int().min(0).default(MAX_CONNECTION_AGE_MS),
    /** Deliveries of an event a consumer fails before it becomes a dead letter (libs/events). */
    CONSUMER_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(1000).default(10),
    /** The first redelivery delay of a failed event; it doubles with every attempt. */
    CONSUMER_RETRY_BASE_MS: z.coerce.number().int().min(1).default(1_000),
    /** The longest redelivery delay of a failed event. */
    CONSUMER_RETRY_MAX_MS: z.coerce.number().int().min(1).default(300_000),
  });
export type GrpcServiceConfig = z.infer<ReturnType<typeof grpcServiceConfig>>;

/** The consumers' retry policy from the service's settings. */
export function consumerRetry(config: GrpcServiceConfig): RetryPolicy {
  return {
    maxAttempts: config.CONSUMER_MAX_ATTEMPTS,
    baseMs: config.CONSUMER_RETRY_BASE_MS,
    maxMs: Math.max(config.CONSUMER_RETRY_MAX_MS, config.CONSUMER_RETRY_BASE_MS),
  };
}

/** What a service's setup gets: its connections, already open and migrated. */
export interface Runtime<C extends GrpcServiceConfig = GrpcServiceConfig> {
  config: C;
  logger: Logger;
  sql: Sql;
  db: Database;
  nats: Nats;
  /** How the service's consumers retry an event before it becomes a dead letter. */
  retry: RetryPolicy;
}

export interface ServiceParts {
  routes: (router: ConnectRouter) => void;
  /** Background work started after the server listens (relays, consumers, timers). */
  start?: () => Promise<void>;
  /** Stops background work; called after the server stopped taking calls. */
  stop?: () => Promise<void>;
}

export interface GrpcServiceSpec<C extends GrpcServiceConfig> {
  name: string;
  /** The Postgres schema this service owns. */
  schema: string;
  migrationsFolder: string;
  serviceNames: string[];
  config: C;
  setup: (rt: Runtime<C>) => Promise<ServiceParts> | ServiceParts;
}

export interface RunningService {
  port: number;
  metricsPort: number;
  stop(): Promise<void>;
}

/**
 * Starts one gRPC service: connects Postgres and NATS, applies its migrations under the
 * advisory lock (waiting, with a bounded backoff and health NOT_SERVING meanwhile, for a
 * database that is still starting), makes sure the events stream exists, serves gRPC with health and
 * metrics, and starts its background work. `stop()` is the graceful shutdown: stop
 * taking calls, finish those in flight, stop background work, drain NATS, close the pool.
 *
 * It also starts the process's tracer (once per process) and, with `SERVICE_TOKEN_KEYS`,
 * internal access: the server checks service tokens against the access policy, and the
 * clients the setup creates call as `spec.name`.
 */
export async function startGrpcService<C extends GrpcServiceConfig>(
  spec: GrpcServiceSpec<C>,
): Promise<RunningService> {
  const { config } = spec;
  startTelemetry({ serviceName: spec.name, otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  const identity = serviceIdentity(spec.name, config);
  const logger = createLogger(spec.name, config.LOG_LEVEL);
  if (identity === undefined)
    logger.warn("SERVICE_TOKEN_KEYS is not set: internal access is open to any caller");
  const { sql, db } = connect(config.DATABASE_URL, { max: config.DB_POOL_MAX, application: spec.name });
  // A database still starting is waited for (migrateSchema's bounded backoff), and so is
  // a NATS that is down or restarting (connectNats); meanwhile the gRPC port answers
  // health checks NOT_SERVING, so a probe reads "not ready" rather than a refused
  // connection, and the process does not exit and restart.
  const notReady = await startNotReadyServer(spec.serviceNames, config);
  let nats: Awaited<ReturnType<typeof connectNats>>;
  try {
    await migrateSchema(sql, db, spec.schema, spec.migrationsFolder, { logger });
    nats = await connectNats(config.NATS_URL, spec.name);
  } finally {
    await notReady?.close();
  }
  await ensureStream(nats.jsm, config.EVENTS_PREFIX, { replicas: config.EVENTS_REPLICAS });
  const parts = await runAsService(identity, () =>
    spec.setup({ config, logger, sql, db, nats, retry: consumerRetry(config) }),
  );

  const check = async () => {
    if (nats.nc.isClosed()) return false;
    await sql`select 1`;
    return true;
  };
  const server = await startGrpcServer({
    interceptors: serviceInterceptors(logger),
    ...(identity === undefined ? {} : { auth: { keys: identity.keys } }),
    routes: parts.routes,
    serviceNames: spec.serviceNames,
    port: config.GRPC_PORT,
    host: config.HOST,
    maxConnectionAgeMs: config.GRPC_MAX_CONNECTION_AGE_MS,
    check,
  });
  const metrics = await startMetricsServer(config.METRICS_PORT, config.HOST);
  await parts.start?.();
  const metricsPort = (metrics.address() as { port: number }).port;
  logger.info({ port: server.port, metricsPort }, `${spec.name} listening`);

  let stopping: Promise<void> | undefined;
  return {
    port: server.port,
    metricsPort,
    stop() {
      stopping ??= (async () => {
        await server.close();
        await parts.stop?.();
        await nats.nc.drain().catch(() => {});
        await sql.end({ timeout: 5 });
        await new Promise((r) => metrics.close(r));
        logger.info(`${spec.name} stopped`);
      })();
      return stopping;
    },
  };
}

/**
 * A gRPC server on the service's port with health only, answering NOT_SERVING, for the
 * time the service waits for its dependencies. None on port 0 (tests): the real server
 * would then listen on another port than this one.
 */
async function startNotReadyServer(serviceNames: string[], config: GrpcServiceConfig) {
  if (config.GRPC_PORT === 0) return undefined;
  return startGrpcServer({
    routes: () => {},
    serviceNames,
    port: config.GRPC_PORT,
    host: config.HOST,
    check: async () => false,
  });
}

/**
 * The interceptors every gRPC service adds to those of `startGrpcServer` (metrics,
 * tracing, internal access): business figures and the per-call log. Exported so that the
 * hop benchmark serves calls exactly as a service does.
 */
export function serviceInterceptors(logger: Logger): Interceptor[] {
  return [businessMetricsInterceptor, logCalls(logger)];
}

/**
 * Logs every error a handler threw that is not a deliberate ConnectError (the client
 * sees only "internal error", so the cause must be in the service's log), and at debug
 * level one line per call (method, code, duration), which carries the call's trace id,
 * request id, shop and operation like every line logged inside it.
 */
function logCalls(logger: Logger): Interceptor {
  return (next) => async (req) => {
    // Probes call health every few seconds; their lines would bury the rest.
    if (req.service.typeName === "grpc.health.v1.Health") return next(req);
    const started = performance.now();
    const method = () => `${req.service.typeName}/${req.method.name}`;
    try {
      const res = await next(req);
      if (logger.isLevelEnabled("debug"))
        logger.debug(
          { method: method(), code: "ok", duration_ms: Math.round((performance.now() - started) * 10) / 10 },
          "rpc",
        );
      return res;
    } catch (err) {
      if (!(err instanceof ConnectError))
        logger.error({ err, method: req.method.name }, "unexpected error in handler");
      else if (logger.isLevelEnabled("debug"))
        logger.debug(
          {
            method: method(),
            code: Code[err.code],
            duration_ms: Math.round((performance.now() - started) * 10) / 10,
          },
          "rpc",
        );
      throw err;
    }
  };
}

/**
 * Wires SIGTERM and SIGINT to a graceful stop, with a hard deadline, and answers the
 * service once started. It takes the start as it runs (`await stopOnSignals(start(...))`):
 * a service answers its health check before the rest of its start is done, and a signal
 * then (a rollout replacing a pod that just came up) would otherwise meet Node's default
 * action and kill it mid-request. A signal during the start stops the service once
 * started; a start that fails rejects the returned promise, as before.
 */
export function stopOnSignals<S extends { stop(): Promise<void> }>(
  service: S | Promise<S>,
  graceMs = 25_000,
): Promise<S> {
  const started = Promise.resolve(service);
  let stopping = false;
  const onSignal = () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(1), graceMs).unref();
    started
      .then((s) => s.stop())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  // A process whose parent died is re-parented: when a supervisor (the local stack, a
  // test harness) is killed without a chance to stop its children, they stop themselves
  // instead of holding ports and database connections. Under Kubernetes or a container
  // runtime the parent never changes, so this never fires there.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) onSignal();
  }, 1000).unref();
  return started;
}
