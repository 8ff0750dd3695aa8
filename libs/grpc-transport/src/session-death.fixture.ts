/**
 * Servers for session-death.test.ts that kill HTTP/2 sessions at chosen moments: a
 * gRPC health server whose calls' `service` field says what to do to the session, and
 * a TCP proxy that can freeze its connections (a peer that stops answering pings).
 */
import * as http2 from "node:http2";
import * as net from "node:net";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
} from "@gw/proto/grpc/health/v1/health_pb";

export interface RogueOptions {
  /** The first this many TCP connections are destroyed as accepted, before any HTTP/2 byte. */
  resetConnections?: number;
  /**
   * The first `count` HTTP/2 sessions end as they begin, before any stream: destroyed
   * (Node then sends GOAWAY saying no stream was processed), or their connection reset.
   */
  endSessions?: { count: number; how: "destroy" | "reset" };
  /** Ends every session after 1 to `maxCallsPerSession` calls, with GOAWAY or destroyed. */
  churn?: { maxCallsPerSession: number };
}

export interface Rogue {
  url: string;
  port: number;
  /** TCP connections accepted so far. */
  readonly connections: number;
  /** HTTP/2 sessions begun so far. */
  readonly sessions: number;
  waitForConnections(n: number): Promise<void>;
  /** Resolves once `n` calls naming `service` arrived. */
  waitForCalls(service: string, n: number): Promise<void>;
  /** Runs `fn` when a call naming `service` arrives, before it is left unanswered. */
  onCall(service: string, fn: () => void): void;
  close(): Promise<void>;
}

/** Waits for a condition the fixture's own events change, without polling the clock. */
class Signal {
  #waiters: (() => void)[] = [];
  notify(): void {
    for (const w of this.#waiters.splice(0)) w();
  }
  async until(done: () => boolean): Promise<void> {
    while (!done()) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }
}

/**
 * Starts a gRPC server of `grpc.health.v1.Health/Check` on a free port. A call's
 * `service` picks what happens: `fine` is answered SERVING; `hang` is never answered;
 * `destroy` destroys the session; `goaway-refuse` sends GOAWAY and refuses the call's
 * stream (REFUSED_STREAM) the first time, and answers it the second; `goaway-destroy` sends GOAWAY covering the
 * call and then destroys the session; anything else runs the `onCall` hook and hangs.
 */
export async function startRogueServer(options: RogueOptions = {}): Promise<Rogue> {
  let connections = 0;
  let sessions = 0;
  const calls = new Map<string, number>();
  const hooks = new Map<string, () => void>();
  const changed = new Signal();
  const open = new Set<http2.ServerHttp2Session>();
  const sockets = new Set<net.Socket>();
  const server = http2.createServer();

  server.on("connection", (socket: net.Socket) => {
    connections++;
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    changed.notify();
    if (connections <= (options.resetConnections ?? 0)) socket.resetAndDestroy();
  });
  server.on("session", (session) => {
    sessions++;
    open.add(session);
    session.once("close", () => open.delete(session));
    session.on("error", () => {});
    changed.notify();
    const end = options.endSessions;
    if (end !== undefined && sessions <= end.count) {
      if (end.how === "destroy") session.destroy();
      else (session.socket as unknown as net.Socket).resetAndDestroy();
    }
  });
  const served = new WeakMap<http2.Http2Session, { calls: number; limit: number }>();
  server.on("stream", (stream, headers) => {
    stream.on("error", () => {});
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => {
      const service = fromBinary(HealthCheckRequestSchema, Buffer.concat(chunks).subarray(5)).service;
      calls.set(service, (calls.get(service) ?? 0) + 1);
      changed.notify();
      const session = stream.session;
      if (headers[":path"] !== "/grpc.health.v1.Health/Check" || session === undefined) {
        stream.respond({ ":status": 404 }, { endStream: true });
        return;
      }
      switch (service) {
        case "fine":
          answer(stream);
          if (options.churn !== undefined) churn(session, options.churn.maxCallsPerSession);
          return;
        case "destroy":
          session.destroy();
          return;
        case "goaway-refuse":
          // The sending again is answered.
          if (calls.get(service) === 2) {
            answer(stream);
            return;
          }
          // As a server going away refuses a stream it will not look at.
          session.goaway(http2.constants.NGHTTP2_NO_ERROR, 0);
          stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
          return;
        case "goaway-destroy":
          session.goaway(http2.constants.NGHTTP2_NO_ERROR, stream.id ?? 0);
          setImmediate(() => session.destroy());
          return;
        default:
          hooks.get(service)?.();
      }
    });
  });

  /** Ends the session after its allotted calls: GOAWAY half of the time, destroyed otherwise. */
  const churn = (session: http2.Http2Session, max: number) => {
    let state = served.get(session);
    if (state === undefined) {
      state = { calls: 0, limit: 1 + Math.floor(Math.random() * max) };
      served.set(session, state);
    }
    if (++state.calls < state.limit) return;
    if (Math.random() < 0.5) session.close();
    else setImmediate(() => session.destroy());
  };

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get connections() {
      return connections;
    },
    get sessions() {
      return sessions;
    },
    waitForConnections: (n) => changed.until(() => connections >= n),
    waitForCalls: (service, n) => changed.until(() => (calls.get(service) ?? 0) >= n),
    onCall: (service, fn) => hooks.set(service, fn),
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of open) s.destroy();
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

/** Answers a health check SERVING: headers, one message, `grpc-status: 0` trailers. */
function answer(stream: http2.ServerHttp2Stream): void {
  if (stream.destroyed || stream.closed) return;
  const bytes = toBinary(HealthCheckResponseSchema, {
    $typeName: "grpc.health.v1.HealthCheckResponse",
    status: HealthCheckResponse_ServingStatus.SERVING,
  });
  const frame = Buffer.alloc(5 + bytes.length);
  frame.writeUInt32BE(bytes.length, 1);
  frame.set(bytes, 5);
  stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, { waitForTrailers: true });
  stream.once("wantTrailers", () => {
    if (!stream.destroyed && !stream.closed) stream.sendTrailers({ "grpc-status": "0" });
  });
  stream.end(frame);
}

export interface FreezingProxy {
  url: string;
  /** TCP connections accepted so far. */
  readonly connections: number;
  /** Stops passing bytes on every connection open now, both ways, and keeps them open. */
  freeze(): void;
  close(): Promise<void>;
}

/** A TCP proxy to `127.0.0.1:<targetPort>` on a free port. */
export async function startProxy(targetPort: number): Promise<FreezingProxy> {
  let connections = 0;
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((client) => {
    connections++;
    const upstream = net.connect(targetPort, "127.0.0.1");
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    for (const s of pair) {
      s.on("error", () => {});
      s.once("close", () => {
        pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    get connections() {
      return connections;
    },
    freeze() {
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await closed;
    },
  };
}
