import type * as http2 from "node:http2";
import { Http2SessionManager } from "@connectrpc/connect-node";

/** The keepalive of createServiceClient's session, so pooled sessions differ only in number. */
const KEEPALIVE = { pingIntervalMs: 10_000, pingTimeoutMs: 5_000, idleConnectionTimeoutMs: 60_000 };

/*
 * An experiment of the gRPC hop benchmark, not used by services: with raw node:http2,
 * two sessions instead of one let the client and the server work on different batches
 * at the same time (11,000 -> 14,600 calls/s at 64 in flight here); with connect-node
 * each call costs so much CPU on both sides that the second session bought nothing and
 * cost CPU. See docs/architecture.md, "The internal gRPC hop".
 */

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

  constructor(baseUrl: string, size: number) {
    if (!(size >= 1)) throw new Error("an HTTP/2 session pool needs at least one session");
    this.managers = Array.from({ length: size }, () => new Http2SessionManager(baseUrl, KEEPALIVE));
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
