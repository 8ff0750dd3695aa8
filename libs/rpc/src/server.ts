import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { Health } from "@gw/proto/grpc/health/v1/health_pb";
import { startGrpcJsServer } from "./grpc-js-server.ts";
import { type HealthChecker, healthService } from "./health.ts";
import { type InternalAuthOptions, internalAuthInterceptor } from "./internal-auth.ts";
import { rpcMetricsInterceptor, sessionsAged } from "./metrics.ts";
import { tracingServerInterceptor } from "./tracing.ts";

export interface GrpcServerOptions {
  /** Registers the service's handlers; health is registered automatically. */
  routes: (router: ConnectRouter) => void;
  /** Fully-qualified names of the services registered, for health checks. */
  serviceNames: string[];
  port: number;
  host: string;
  /** Readiness of the process's dependencies, reported through grpc.health.v1. */
  check: HealthChecker;
  interceptors?: Interceptor[];
  /**
   * Internal access: every call but health checks needs a service token of this key
   * set, from a caller the policy allows. Without it the server takes any caller.
   */
  auth?: InternalAuthOptions;
  /**
   * How long one client session may live (gRPC's MAX_CONNECTION_AGE): then the server
   * sends GOAWAY, calls in flight finish, and the client opens a new session, which a
   * per-connection balancer (a Kubernetes Service) may send to another replica. ±10 %
   * jitter spreads the reconnects. 0 keeps sessions for ever. Default 5 minutes.
   */
  maxConnectionAgeMs?: number;
}

export interface GrpcServer {
  port: number;
  /** Reports NOT_SERVING, stops accepting, and waits for the calls in flight. */
  close(): Promise<void>;
}

/** The default of `maxConnectionAgeMs`. */
export const MAX_CONNECTION_AGE_MS = 5 * 60_000;
/** How long a session told to go away may keep its calls in flight before it is cut. */
const MAX_CONNECTION_AGE_GRACE_MS = 30_000;

/**
 * Starts a gRPC server (HTTP/2 without TLS, @grpc/grpc-js) that serves the given routes
 * plus the standard health service. Every call runs the same interceptors, outermost
 * first: metrics, then tracing (continuing the caller's `traceparent`), then internal
 * access when `auth` is given, then the caller's own.
 */
export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcServer> {
  let draining = false;
  const server = await startGrpcJsServer({
    routes(router) {
      router.service(
        Health,
        healthService(options.serviceNames, options.check, () => draining),
      );
      options.routes(router);
    },
    interceptors: [
      rpcMetricsInterceptor,
      tracingServerInterceptor,
      ...(options.auth === undefined ? [] : [internalAuthInterceptor(options.auth, options.serviceNames)]),
      ...(options.interceptors ?? []),
    ],
    port: options.port,
    host: options.host,
    maxConnectionAgeMs: options.maxConnectionAgeMs ?? MAX_CONNECTION_AGE_MS,
    maxConnectionAgeGraceMs: MAX_CONNECTION_AGE_GRACE_MS,
    onAged: () => sessionsAged.inc(),
  });
  return {
    port: server.port,
    async close() {
      draining = true;
      await server.close();
    },
  };
}
