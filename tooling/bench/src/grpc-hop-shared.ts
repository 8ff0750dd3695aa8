import * as http2 from "node:http2";
import type { Socket } from "node:net";
import type { Measurement } from "./measure.ts";

/** How the bench server serves: see grpc-hop-server.ts. */
export type HopServerMode = "defaults" | "tuned" | "connect" | "raw" | "gw" | "gw-service";

/** A client of the hop: see grpc-hop-client.ts. */
export type HopClientKind =
  | "grpc-defaults"
  | "grpc-tuned"
  | "grpc-pool"
  | "connect"
  | "grpc-js"
  | "raw"
  | "gw"
  | "gw-service";

/** One line of the comparison: which server serves which client. */
export interface HopVariant {
  name: string;
  /** The letter, accepted by `--variants` as well as the name. */
  letter?: string;
  label: string;
  server: HopServerMode;
  client: HopClientKind;
  /** HTTP/2 sessions of a `grpc-pool` or `gw-service` client. */
  sessions?: number;
  /** Only run when named: variants for finding where the time goes. */
  extra?: true;
}

/**
 * The variants of the issue (the first, connect-node on both sides, is the baseline the
 * ratios refer to), then extra ones for finding where the time goes. (b) and (c) are
 * connect-node with the HTTP/2 settings startGrpcServer and createServiceClient had
 * before they moved to @grpc/grpc-js; (f) is what they are now, set up as a service sets
 * them up (see grpc-hop-server.ts): the process tracer without an exporter, a service
 * identity and token checks, the runtime's interceptors, and a method of a gateway
 * service (health checks skip the token check). `gw-bare` is (f) without any of that:
 * Health/Check, no tracer, no identity.
 */
export const HOP_VARIANTS: HopVariant[] = [
  {
    name: "baseline",
    letter: "a",
    label: "(a) connect-node gRPC, Node defaults",
    server: "defaults",
    client: "grpc-defaults",
  },
  {
    name: "tuned",
    letter: "b",
    label: "(b) connect-node gRPC, @gw/rpc settings",
    server: "tuned",
    client: "grpc-tuned",
  },
  {
    name: "connect",
    letter: "c",
    label: "(c) Connect protocol, same settings",
    server: "connect",
    client: "connect",
  },
  {
    name: "grpc-js",
    letter: "d",
    label: "(d) @grpc/grpc-js client -> startGrpcServer",
    server: "gw",
    client: "grpc-js",
  },
  {
    name: "raw-h2",
    letter: "e",
    label: "(e) floor: node:http2 with gRPC framing, no connect",
    server: "raw",
    client: "raw",
  },
  {
    name: "gw",
    letter: "f",
    label: "(f) createServiceClient -> startGrpcServer, as services run them",
    server: "gw-service",
    client: "gw-service",
  },
  {
    name: "gw-sessions-2",
    label: "(f) with 2 HTTP/2 sessions per client",
    server: "gw-service",
    client: "gw-service",
    sessions: 2,
    extra: true,
  },
  {
    name: "gw-bare",
    label: "(f) without telemetry or tokens: Health/Check, no tracer, no identity",
    server: "gw",
    client: "gw",
    extra: true,
  },
  {
    name: "gw-server",
    label: "connect-node client -> startGrpcServer (our server only)",
    server: "gw",
    client: "grpc-tuned",
    extra: true,
  },
  {
    name: "gw-client",
    label: "createServiceClient -> connect-node server (our client only)",
    server: "tuned",
    client: "gw",
    extra: true,
  },
  ...[1, 2, 4, 8].map(
    (sessions): HopVariant => ({
      name: `sessions-${sessions}`,
      label: `(b) with ${sessions} HTTP/2 session(s)`,
      server: "tuned",
      client: "grpc-pool",
      sessions,
      extra: true,
    }),
  ),
  {
    name: "defaults-tuned-client",
    label: "Node-defaults server, tuned client",
    server: "defaults",
    client: "grpc-tuned",
    extra: true,
  },
];

/** The environment variable that hands the run's service-token key set to both processes. */
export const BENCH_KEYS_ENV = "GW_BENCH_SERVICE_TOKEN_KEYS";

/** The run's key set (made fresh by grpc-hop.ts for every variant). */
export function benchKeys(): string {
  const keys = process.env[BENCH_KEYS_ENV];
  if (keys === undefined) throw new Error(`${BENCH_KEYS_ENV} is not set (run through grpc-hop.ts)`);
  return keys;
}

/** What a client process reports for one concurrency level. */
export interface HopLevelResult extends Measurement {
  serverCpuPercent: number;
}

/** Messages between the parent and its two children. */
export type HopMessage =
  | { t: "ready"; port: number }
  | { t: "cpu"; usage?: NodeJS.CpuUsage }
  | { t: "mark"; id: number }
  | { t: "marked"; id: number; usage: NodeJS.CpuUsage }
  | { t: "result"; result: HopLevelResult }
  | { t: "done" }
  | { t: "stop" };

/**
 * The HTTP/2 settings startGrpcServer had on connect-node: room for many calls in flight
 * and windows that never stall a large message (the same as Node's defaults for small
 * unary calls, measured).
 */
const HTTP2_SERVER_OPTIONS: http2.ServerOptions = {
  settings: { maxConcurrentStreams: 4096, initialWindowSize: 4 * 1024 * 1024 },
};

/** Widens a new session's connection window, unless its peer already reset it. */
function tuneServerSession(session: http2.ServerHttp2Session): void {
  if (session.destroyed) return;
  try {
    session.setLocalWindowSize(16 * 1024 * 1024);
  } catch {
    // Destroyed between the check and the call: nothing to tune.
  }
}

/**
 * An HTTP/2 server for the connect-node variants (b) and (c), with the session settings
 * startGrpcServer had on connect-node, so they differ only in the protocol they serve.
 */
export function tuneHttp2Server(
  handler: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
) {
  const server = http2.createServer(HTTP2_SERVER_OPTIONS, handler);
  server.on("session", tuneServerSession);
  server.on("connection", (socket: Socket) => socket.setNoDelay(true));
  return server;
}
