import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createFastGrpcTransport } from "@gw/grpc-transport";
import { createGrpcJsTransport } from "./grpc-js-transport.ts";
import { resolveIdentity, type ServiceIdentity, serviceTokenInterceptor } from "./internal-auth.ts";
import { rpcClientMetricsInterceptor } from "./metrics.ts";
import { tracingClientInterceptor } from "./tracing.ts";
import { RPC_WIRE } from "./wire.ts";

export interface ServiceClientOptions {
  /** Deadline for calls that set none, in milliseconds. */
  defaultTimeoutMs?: number;
  /** Run inside ours (tracing, metrics, the service token), in the order given. */
  interceptors?: Interceptor[];
  /**
   * Whom the calls come from. By default the identity of the service being set up
   * (`runAsService`) or of the process (`setServiceIdentity`); `null` sends no token.
   */
  identity?: ServiceIdentity | null;
  /** HTTP/2 sessions per client for unary calls, used in turn (default 1). */
  sessions?: number;
}

/**
 * A gRPC client of one of our services over one shared HTTP/2 session per target,
 * which pings a session whose calls hear nothing, and checks one that sat idle before
 * reusing it, so a dead peer is noticed before the next call.
 *
 * Unary calls take the lean path of @gw/grpc-transport (plain gRPC straight on
 * `node:http2`); streaming calls go through connect-node's gRPC transport. One session
 * is deliberate: the hop benchmark (`pnpm bench grpc-hop`) measures the cost per call
 * in CPU, not in connections. See docs/architecture.md, "The internal gRPC hop".
 *
 * Every call opens a client span (its `traceparent` goes in the metadata), is counted in
 * `rpc_client_duration_seconds`, and carries a service token when the process has an
 * identity (docs/architecture.md, "Internal access").
 *
 * With `GW_RPC_WIRE=grpc-js` the calls go over @grpc/grpc-js instead (see wire.ts).
 */
export function createServiceClient<S extends DescService>(
  service: S,
  baseUrl: string,
  options: ServiceClientOptions = {},
): Client<S> {
  const create = RPC_WIRE === "grpc-js" ? createGrpcJsTransport : createFastGrpcTransport;
  const transport = create({
    baseUrl,
    defaultTimeoutMs: options.defaultTimeoutMs ?? 5_000,
    interceptors: [
      tracingClientInterceptor,
      rpcClientMetricsInterceptor,
      ...(options.identity === null ? [] : [serviceTokenInterceptor(options.identity ?? resolveIdentity())]),
      ...(options.interceptors ?? []),
    ],
    pingIntervalMs: 10_000,
    pingTimeoutMs: 5_000,
    idleConnectionTimeoutMs: 60_000,
    ...(options.sessions === undefined ? {} : { sessions: options.sessions }),
  });
  return createClient(service, transport);
}
