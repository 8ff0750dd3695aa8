import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcJsTransport } from "./grpc-js-transport.ts";
import { resolveIdentity, type ServiceIdentity, serviceTokenInterceptor } from "./internal-auth.ts";
import { rpcClientMetricsInterceptor } from "./metrics.ts";
import { tracingClientInterceptor } from "./tracing.ts";

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
  /** HTTP/2 connections per client for its calls, used in turn (default 1). */
  sessions?: number;
}

/**
 * A gRPC client of one of our services: a connect client over @grpc/grpc-js with one
 * connection per target, pinged while calls wait on it and let go after a minute idle.
 * One connection is deliberate: the hop benchmark (`pnpm bench grpc-hop`) measures the
 * cost per call in CPU, not in connections. See docs/architecture.md, "The internal
 * gRPC hop".
 *
 * Every call opens a client span (its `traceparent` goes in the metadata), is counted in
 * `rpc_client_duration_seconds`, and carries a service token when the process has an
 * identity (docs/architecture.md, "Internal access").
 */
export function createServiceClient<S extends DescService>(
  service: S,
  baseUrl: string,
  options: ServiceClientOptions = {},
): Client<S> {
  const transport = createGrpcJsTransport({
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
