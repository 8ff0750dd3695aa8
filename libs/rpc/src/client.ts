import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createFastGrpcTransport } from "./fast-transport.ts";

export interface ServiceClientOptions {
  /** Deadline for calls that set none, in milliseconds. */
  defaultTimeoutMs?: number;
  interceptors?: Interceptor[];
}

/**
 * A gRPC client of one of our services over one shared HTTP/2 session per target,
 * which pings a session whose calls hear nothing, and checks one that sat idle before
 * reusing it, so a dead peer is noticed before the next call.
 *
 * Unary calls take the lean path of fast-transport.ts (plain gRPC straight on
 * `node:http2`); streaming calls go through connect-node's gRPC transport. One session
 * is deliberate: the hop benchmark (`pnpm bench grpc-hop`) measures the cost per call
 * in CPU, not in connections. See docs/architecture.md, "The internal gRPC hop".
 */
export function createServiceClient<S extends DescService>(
  service: S,
  baseUrl: string,
  options: ServiceClientOptions = {},
): Client<S> {
  const transport = createFastGrpcTransport({
    baseUrl,
    defaultTimeoutMs: options.defaultTimeoutMs ?? 5_000,
    interceptors: options.interceptors ?? [],
    pingIntervalMs: 10_000,
    pingTimeoutMs: 5_000,
    idleConnectionTimeoutMs: 60_000,
  });
  return createClient(service, transport);
}
