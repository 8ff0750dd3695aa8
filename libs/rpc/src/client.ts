import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

export interface ServiceClientOptions {
  /** Deadline for calls that set none, in milliseconds. */
  defaultTimeoutMs?: number;
  interceptors?: Interceptor[];
}

/**
 * A gRPC client of one of our services over one shared HTTP/2 session per target,
 * which pings idle connections so a dead peer is noticed before the next call.
 *
 * One session is deliberate: the hop benchmark (`pnpm bench grpc-hop`) found that a
 * pool of sessions, larger flow-control windows and Nagle settings change nothing
 * measurable here, because each call's CPU cost inside connect-node, not the
 * connection, is the limit. See docs/architecture.md, "The internal gRPC hop".
 */
export function createServiceClient<S extends DescService>(
  service: S,
  baseUrl: string,
  options: ServiceClientOptions = {},
): Client<S> {
  const sessionManager = new Http2SessionManager(
    baseUrl,
    { pingIntervalMs: 10_000, pingTimeoutMs: 5_000, idleConnectionTimeoutMs: 60_000 },
    // Our servers never push; refusing it up front saves the peer the bookkeeping.
    { settings: { enablePush: false } },
  );
  const transport = createGrpcTransport({
    baseUrl,
    sessionManager,
    defaultTimeoutMs: options.defaultTimeoutMs ?? 5_000,
    interceptors: options.interceptors ?? [],
  });
  return createClient(service, transport);
}
