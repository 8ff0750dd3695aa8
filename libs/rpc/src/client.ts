import type * as http2 from "node:http2";
import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

export interface ServiceClientOptions {
  /** Deadline for calls that set none, in milliseconds. */
  defaultTimeoutMs?: number;
  interceptors?: Interceptor[];
}

/** Keepalive of every session: a dead peer is noticed before the next call waits on it. */
const KEEPALIVE = { pingIntervalMs: 10_000, pingTimeoutMs: 5_000, idleConnectionTimeoutMs: 60_000 };

/**
 * HTTP/2 sessions per target. One Node process serves one HTTP/2 session in lockstep:
 * it reads a batch of frames, runs every call in it, and writes all the answers in one
 * go, so with one session the client and the server take turns and neither uses more
 * than about half a core. Two sessions let one side work on one batch while the other
 * side works on the other; more adds little on two cores. See docs/architecture.md,
 * "The internal gRPC hop".
 */
export const SESSIONS_PER_TARGET = 2;

/** Client session settings: no server push, windows matching the server's. */
const CLIENT_SESSION_OPTIONS: http2.ClientSessionOptions = {
  settings: { enablePush: false, initialWindowSize: 4 * 1024 * 1024 },
};

/**
 * A fixed set of HTTP/2 sessions to one target, used in turn, behind one transport.
 * Each session has its own connect-node manager, so each reconnects, verifies and
 * pings on its own; a call goes to the next session in turn.
 */
export class Http2SessionPool {
  readonly authority: string;
  private readonly managers: Http2SessionManager[];
  private readonly owner = new WeakMap<http2.ClientHttp2Stream, Http2SessionManager>();
  private next = 0;

  constructor(baseUrl: string, size = SESSIONS_PER_TARGET) {
    if (!(size >= 1)) throw new Error("an HTTP/2 session pool needs at least one session");
    this.managers = Array.from(
      { length: size },
      () => new Http2SessionManager(baseUrl, KEEPALIVE, CLIENT_SESSION_OPTIONS),
    );
    this.authority = this.managers[0]?.authority ?? new URL(baseUrl).origin;
  }

  /** Opens a stream on the next session in turn, connecting it first if needed. */
  async request(
    method: string,
    path: string,
    headers: http2.OutgoingHttpHeaders,
    options: Omit<http2.ClientSessionRequestOptions, "signal">,
  ): Promise<http2.ClientHttp2Stream> {
    const manager = this.managers[this.next++ % this.managers.length] as Http2SessionManager;
    const stream = await manager.request(method, path, headers, options);
    this.owner.set(stream, manager);
    return stream;
  }

  /** Tells the session that carried the stream that its peer is alive. */
  notifyResponseByteRead(stream: http2.ClientHttp2Stream): void {
    this.owner.get(stream)?.notifyResponseByteRead(stream);
  }

  /** Closes every session and the streams open on them. */
  abort(reason?: Error): void {
    for (const manager of this.managers) manager.abort(reason);
  }
}

/**
 * A gRPC client of one of our services: one transport per target over a small pool of
 * HTTP/2 sessions (SESSIONS_PER_TARGET), each pinging when idle calls would otherwise
 * find a dead peer.
 */
export function createServiceClient<S extends DescService>(
  service: S,
  baseUrl: string,
  options: ServiceClientOptions = {},
): Client<S> {
  const transport = createGrpcTransport({
    baseUrl,
    sessionManager: new Http2SessionPool(baseUrl),
    defaultTimeoutMs: options.defaultTimeoutMs ?? 5_000,
    interceptors: options.interceptors ?? [],
  });
  return createClient(service, transport);
}
