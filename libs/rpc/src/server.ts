import * as http2 from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createFastUnaryHandler, recordUnaryRoutes, type UnaryRoute } from "@gw/grpc-transport";
import { Health } from "@gw/proto/grpc/health/v1/health_pb";
import { startGrpcJsServer } from "./grpc-js-server.ts";
import { type HealthChecker, healthService } from "./health.ts";
import { type InternalAuthOptions, internalAuthInterceptor } from "./internal-auth.ts";
import { rpcMetricsInterceptor, sessionsAged } from "./metrics.ts";
import { tracingServerInterceptor } from "./tracing.ts";
import { RPC_WIRE } from "./wire.ts";

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

/**
 * HTTP/2 settings for the internal hop: room for many calls in flight and windows
 * that never stall a large message. For small unary calls they measure the same as
 * Node's defaults (Node already sets TCP_NODELAY, and its stream limit is unbounded):
 * the hop's cost is CPU per call. See docs/architecture.md, "The internal gRPC hop".
 */
export const HTTP2_SETTINGS: http2.Settings = {
  maxConcurrentStreams: 4096,
  initialWindowSize: 4 * 1024 * 1024,
};
const SESSION_WINDOW = 16 * 1024 * 1024;

/** The default of `maxConnectionAgeMs`. */
export const MAX_CONNECTION_AGE_MS = 5 * 60_000;
/** How long a session told to go away may keep its calls in flight before it is cut. */
const MAX_CONNECTION_AGE_GRACE_MS = 30_000;

/** Options of the HTTP/2 server behind startGrpcServer, for tools that build their own. */
export const HTTP2_SERVER_OPTIONS: http2.ServerOptions = { settings: HTTP2_SETTINGS };

/**
 * Applies the per-session tuning of startGrpcServer to a new server session. It runs in
 * the server's `session` handler, where a throw would end the process, so a session
 * already destroyed (its peer reset the connection at once) is left alone.
 */
export function tuneServerSession(session: http2.ServerHttp2Session): void {
  if (session.destroyed) return;
  try {
    session.setLocalWindowSize(SESSION_WINDOW);
  } catch {
    // Destroyed between the check and the call: nothing to tune.
  }
}

/**
 * Starts a gRPC server (gRPC protocol only, HTTP/2 without TLS) that serves the given
 * routes plus the standard health service, with metrics on every call.
 *
 * Unary methods are answered by the lean path of @gw/grpc-transport straight from the
 * HTTP/2 stream; everything else (streaming methods such as Health/Watch, JSON,
 * compressed requests, unknown paths) goes to connect-node's adapter, handed the same
 * stream through Node's own compat request and response objects. Both run the same
 * interceptors: metrics, then tracing (continuing the caller's `traceparent`), then
 * internal access when `auth` is given, then the caller's own.
 *
 * With `GW_RPC_WIRE=grpc-js` a @grpc/grpc-js server serves the same routes with the
 * same interceptors instead (see wire.ts).
 */
export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcServer> {
  let draining = false;
  const interceptors = [
    rpcMetricsInterceptor,
    tracingServerInterceptor,
    ...(options.auth === undefined ? [] : [internalAuthInterceptor(options.auth, options.serviceNames)]),
    ...(options.interceptors ?? []),
  ];
  if (RPC_WIRE === "grpc-js") {
    const server = await startGrpcJsServer({
      routes(router) {
        router.service(
          Health,
          healthService(options.serviceNames, options.check, () => draining),
        );
        options.routes(router);
      },
      interceptors,
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
  const unary = new Map<string, UnaryRoute>();
  const handler = connectNodeAdapter({
    grpc: true,
    connect: false,
    grpcWeb: false,
    interceptors,
    routes(router) {
      const recording = recordUnaryRoutes(router, unary);
      recording.service(
        Health,
        healthService(options.serviceNames, options.check, () => draining),
      );
      options.routes(recording);
    },
  });
  const fast = createFastUnaryHandler(unary, { interceptors });
  // No request listener: Node would then answer every stream through its compat layer.
  const server = http2.createServer(HTTP2_SERVER_OPTIONS);
  server.on("stream", (stream, headers, _flags, rawHeaders: string[]) => {
    if (fast(stream, headers)) return;
    handler(
      new http2.Http2ServerRequest(stream, headers, {}, rawHeaders),
      new http2.Http2ServerResponse(stream),
    );
  });
  const open = sessions(server);
  const maxAgeMs = options.maxConnectionAgeMs ?? MAX_CONNECTION_AGE_MS;
  server.on("session", (session) => {
    open.add(session);
    tuneServerSession(session);
    const aged = maxAgeMs > 0 ? ageOut(session, maxAgeMs) : undefined;
    session.once("close", () => {
      open.delete(session);
      clearTimeout(aged);
    });
  });
  // Node sets this already (checked with strace); kept explicit so a change of default
  // cannot make small unary frames wait for Nagle's algorithm.
  server.on("connection", (socket: Socket) => socket.setNoDelay(true));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    async close() {
      draining = true;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle sessions keep server.close() waiting forever; ask peers to go away.
        for (const s of sessions(server)) s.close();
      });
    },
  };
}

/**
 * Ends a session at its age (with jitter): GOAWAY lets the calls in flight finish and
 * refuses new ones, which the client sends again on a fresh session; a session still
 * open after the grace period is destroyed.
 */
function ageOut(session: http2.ServerHttp2Session, maxAgeMs: number): NodeJS.Timeout {
  const timer = setTimeout(
    () => {
      sessionsAged.inc();
      session.close();
      setTimeout(() => session.destroy(), MAX_CONNECTION_AGE_GRACE_MS).unref();
    },
    maxAgeMs * (0.9 + Math.random() * 0.2),
  );
  timer.unref();
  return timer;
}

const tracked = new WeakMap<http2.Http2Server, Set<http2.ServerHttp2Session>>();
function sessions(server: http2.Http2Server): Set<http2.ServerHttp2Session> {
  let set = tracked.get(server);
  if (!set) {
    set = new Set();
    tracked.set(server, set);
  }
  return set;
}
