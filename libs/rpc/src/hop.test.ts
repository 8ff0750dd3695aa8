import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import {
  type Client,
  createClient,
  type HandlerContext,
  type Interceptor,
  type ServiceImpl,
} from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { Health, HealthCheckResponse_ServingStatus } from "@gw/proto/grpc/health/v1/health_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServiceClient } from "./client.ts";
import { Code, ConnectError, errorInfo, failure } from "./errors.ts";
import { type GrpcServer, startGrpcServer } from "./server.ts";

// The internal hop must stay plain gRPC with connect's semantics (codes, details, deadlines,
// cancellation): these tests put createServiceClient and startGrpcServer against each
// other and against connect-node's own client and server (stock grpc-js clients of the
// health service are in grpc-js.test.ts), on real servers.

/** Resolves when the promise does, or fails the test after a bounded wait. */
function within<T>(promise: Promise<T>, ms = 5_000): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms).unref(),
    ),
  ]);
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** What the handlers of waiting calls saw, by call id (the request's `method` field). */
const started = new Map<string, ReturnType<typeof deferred<number | undefined>>>();
const aborted = new Map<string, ReturnType<typeof deferred<unknown>>>();
const watch = (id: string) => {
  started.set(id, deferred());
  aborted.set(id, deferred());
  return { started: started.get(id)?.promise, aborted: aborted.get(id)?.promise };
};

/** A matching service whose `currency` picks what the call does. */
const matching: Partial<ServiceImpl<typeof MatchingService>> = {
  async getPoolDepth(req, ctx: HandlerContext) {
    switch (req.currency) {
      case "echo":
        return { payouts: BigInt(req.method.length), freeAmount: req.method };
      case "header":
        return { freeAmount: ctx.requestHeader.get("x-gw-test") ?? "" };
      case "fail":
        throw failure(
          Code.FailedPrecondition,
          "idempotency_conflict",
          "100% taken: ключ занят",
          "merchant_operation_id",
        );
      case "code":
        throw new ConnectError(`code ${req.method}`, Number(req.method) as Code);
      case "crash":
        throw new Error("a cause the caller must not see");
      case "wait": {
        started.get(req.method)?.resolve(ctx.timeoutMs());
        const reason = await new Promise((resolve) => {
          if (ctx.signal.aborted) resolve(ctx.signal.reason);
          ctx.signal.addEventListener("abort", () => resolve(ctx.signal.reason), { once: true });
          setTimeout(() => resolve("never aborted"), 5_000).unref();
        });
        aborted.get(req.method)?.resolve(reason);
        return { freeAmount: "late" };
      }
      default:
        throw failure(Code.InvalidArgument, "validation_failed", `unknown command ${req.currency}`);
    }
  },
};

/** What the server interceptors saw: method names and thrown errors, in order. */
const intercepted: { method: string; error?: unknown }[] = [];
const recordCalls: Interceptor = (next) => async (req) => {
  try {
    const res = await next(req);
    intercepted.push({ method: req.method.name });
    return res;
  } catch (error) {
    intercepted.push({ method: req.method.name, error });
    throw error;
  }
};

let gw: GrpcServer;
let gwUrl: string;
let plain: http2.Http2Server;
let plainUrl: string;
const plainSessions = new Set<http2.ServerHttp2Session>();

beforeAll(async () => {
  gw = await startGrpcServer({
    routes: (router) => router.service(MatchingService, matching),
    serviceNames: [MatchingService.typeName],
    port: 0,
    host: "127.0.0.1",
    check: async () => true,
    interceptors: [recordCalls],
  });
  gwUrl = `http://127.0.0.1:${gw.port}`;
  plain = http2.createServer(
    connectNodeAdapter({ grpc: true, routes: (router) => router.service(MatchingService, matching) }),
  );
  plain.on("session", (s) => {
    plainSessions.add(s);
    s.once("close", () => plainSessions.delete(s));
  });
  await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
  plainUrl = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await gw?.close();
  for (const s of plainSessions) s.destroy();
  await new Promise((resolve) => plain?.close(resolve));
});

type MatchingClient = Client<typeof MatchingService>;
const pairs: [string, () => MatchingClient][] = [
  ["createServiceClient -> startGrpcServer", () => createServiceClient(MatchingService, gwUrl)],
  [
    "connect-node's gRPC client -> startGrpcServer",
    () => createClient(MatchingService, createGrpcTransport({ baseUrl: gwUrl })),
  ],
  [
    "createServiceClient -> a plain connect-node server",
    () => createServiceClient(MatchingService, plainUrl),
  ],
  [
    "createServiceClient with 2 sessions -> startGrpcServer",
    () => createServiceClient(MatchingService, gwUrl, { sessions: 2 }),
  ],
];

async function rejection(promise: Promise<unknown>): Promise<ConnectError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  return err as ConnectError;
}

describe.each(pairs)("%s", (_name, makeClient) => {
  let client: MatchingClient;
  beforeAll(() => {
    client = makeClient();
  });

  it("answers a unary call", async () => {
    const res = await client.getPoolDepth({ method: "card", currency: "echo" });
    expect(res.freeAmount).toBe("card");
    expect(res.payouts).toBe(4n);
  });

  it("carries a domain error's code, message and ErrorInfo detail", async () => {
    const err = await rejection(client.getPoolDepth({ method: "x", currency: "fail" }));
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(err.rawMessage).toBe("100% taken: ключ занят");
    const info = errorInfo(err);
    expect({ code: info?.code, field: info?.field }).toEqual({
      code: "idempotency_conflict",
      field: "merchant_operation_id",
    });
  });

  it("carries every status code with its message", async () => {
    for (let code = Code.Canceled; code <= Code.Unauthenticated; code++) {
      const err = await rejection(client.getPoolDepth({ method: String(code), currency: "code" }));
      expect({ code: err.code, message: err.rawMessage }).toEqual({ code, message: `code ${code}` });
    }
  });

  it("answers an unexpected handler error as INTERNAL without its cause", async () => {
    const err = await rejection(client.getPoolDepth({ method: "x", currency: "crash" }));
    expect(err.code).toBe(Code.Internal);
    expect(err.rawMessage).toBe("internal error");
  });

  it("moves messages larger than the default flow-control windows both ways", async () => {
    for (const size of [70 * 1024, 3 * 1024 * 1024]) {
      const big = `${"x".repeat(size - 7)}ü-end`;
      const res = await client.getPoolDepth({ method: big, currency: "echo" });
      expect(res.freeAmount).toBe(big);
    }
  });

  it("fails a call past its deadline with DEADLINE_EXCEEDED and aborts the handler's signal", async () => {
    const id = `deadline-${Math.random()}`;
    const seen = watch(id);
    const err = await rejection(client.getPoolDepth({ method: id, currency: "wait" }, { timeoutMs: 200 }));
    expect(err.code).toBe(Code.DeadlineExceeded);
    const budget = await within(seen.started as Promise<number | undefined>);
    expect(budget).toBeGreaterThan(0);
    expect(budget).toBeLessThanOrEqual(200);
    expect(await within(seen.aborted as Promise<unknown>)).not.toBe("never aborted");
  });

  it("cancels a call when the caller's signal aborts, and the handler's signal with it", async () => {
    const id = `cancel-${Math.random()}`;
    const seen = watch(id);
    const controller = new AbortController();
    const call = rejection(
      client.getPoolDepth({ method: id, currency: "wait" }, { signal: controller.signal }),
    );
    await within(seen.started as Promise<number | undefined>);
    controller.abort();
    expect((await call).code).toBe(Code.Canceled);
    expect(await within(seen.aborted as Promise<unknown>)).not.toBe("never aborted");
  });

  it("answers many concurrent calls", async () => {
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => client.getPoolDepth({ method: `m${i}`, currency: "echo" })),
    );
    expect(answers.map((a) => a.freeAmount)).toEqual(Array.from({ length: 200 }, (_, i) => `m${i}`));
  });
});

describe("startGrpcServer", () => {
  it("runs the server interceptors around every unary call and shows them the handler's own error", async () => {
    intercepted.length = 0;
    const client = createServiceClient(MatchingService, gwUrl);
    await client.getPoolDepth({ method: "a", currency: "echo" });
    await client.getPoolDepth({ method: "a", currency: "crash" }).catch(() => {});
    expect(intercepted.map((c) => c.method)).toEqual(["GetPoolDepth", "GetPoolDepth"]);
    expect(intercepted[0]?.error).toBeUndefined();
    expect(intercepted[1]?.error).toBeInstanceOf(Error);
    expect(intercepted[1]?.error).not.toBeInstanceOf(ConnectError);
  });

  it("answers UNIMPLEMENTED for a service it does not serve", async () => {
    const ledger = createServiceClient(LedgerService, gwUrl);
    const err = await rejection(ledger.getBalances({}));
    expect(err.code).toBe(Code.Unimplemented);
  });

  it("streams the health Watch", async () => {
    const health = createServiceClient(Health, gwUrl);
    const controller = new AbortController();
    const stream = health.watch({ service: "" }, { signal: controller.signal, timeoutMs: 0 });
    const first = await within(stream[Symbol.asyncIterator]().next());
    controller.abort();
    expect(first.value?.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });
});

describe("createServiceClient", () => {
  it("sends the headers its interceptors add", async () => {
    const addHeader: Interceptor = (next) => (req) => {
      req.header.set("x-gw-test", "from-interceptor");
      return next(req);
    };
    const client = createServiceClient(MatchingService, gwUrl, { interceptors: [addHeader] });
    expect((await client.getPoolDepth({ method: "", currency: "header" })).freeAmount).toBe(
      "from-interceptor",
    );
  });

  it("spreads its calls over the sessions it is given", async () => {
    const before = new Set(plainSessions);
    const client = createServiceClient(MatchingService, plainUrl, { sessions: 2 });
    const answers = await Promise.all(
      ["1", "2", "3", "4"].map((m) => client.getPoolDepth({ method: m, currency: "echo" })),
    );
    expect(answers.map((a) => a.freeAmount)).toEqual(["1", "2", "3", "4"]);
    expect([...plainSessions].filter((s) => !before.has(s))).toHaveLength(2);
  });

  it("applies its default deadline to calls that set none", async () => {
    const id = `default-deadline-${Math.random()}`;
    const seen = watch(id);
    const client = createServiceClient(MatchingService, gwUrl, { defaultTimeoutMs: 150 });
    const err = await rejection(client.getPoolDepth({ method: id, currency: "wait" }));
    expect(err.code).toBe(Code.DeadlineExceeded);
    expect(await within(seen.started as Promise<number | undefined>)).toBeLessThanOrEqual(150);
  });

  it("reconnects after the server closes its session gracefully or drops it", async () => {
    const client = createServiceClient(MatchingService, plainUrl);
    expect((await client.getPoolDepth({ method: "1", currency: "echo" })).freeAmount).toBe("1");
    expect(plainSessions.size).toBeGreaterThan(0);
    for (const s of plainSessions) s.close();
    expect((await client.getPoolDepth({ method: "2", currency: "echo" })).freeAmount).toBe("2");
    for (const s of plainSessions) s.destroy();
    // The destroyed session may fail the call that races it; the next one reconnects.
    await client.getPoolDepth({ method: "3", currency: "echo" }).catch(() => {});
    expect((await client.getPoolDepth({ method: "4", currency: "echo" })).freeAmount).toBe("4");
  });

  it("fails a call in flight UNAVAILABLE when the server drops the connection, and the next call reconnects", async () => {
    const id = `dropped-${Math.random()}`;
    const seen = watch(id);
    const client = createServiceClient(MatchingService, plainUrl);
    const call = rejection(client.getPoolDepth({ method: id, currency: "wait" }));
    await within(seen.started as Promise<number | undefined>);
    for (const s of plainSessions) s.destroy();
    expect((await call).code).toBe(Code.Unavailable);
    expect((await client.getPoolDepth({ method: "after", currency: "echo" })).freeAmount).toBe("after");
  });

  it("reconnects to a server restarted on the same port", async () => {
    const first = await startGrpcServer({
      routes: (router) => router.service(MatchingService, matching),
      serviceNames: [],
      port: 0,
      host: "127.0.0.1",
      check: async () => true,
    });
    const port = first.port;
    const client = createServiceClient(MatchingService, `http://127.0.0.1:${port}`);
    expect((await client.getPoolDepth({ method: "before", currency: "echo" })).freeAmount).toBe("before");
    await first.close();
    const second = await startGrpcServer({
      routes: (router) => router.service(MatchingService, matching),
      serviceNames: [],
      port,
      host: "127.0.0.1",
      check: async () => true,
    });
    try {
      expect((await client.getPoolDepth({ method: "after", currency: "echo" })).freeAmount).toBe("after");
    } finally {
      await second.close();
    }
  });

  it("fails UNAVAILABLE when nothing listens", async () => {
    const closed = await startGrpcServer({
      routes: () => {},
      serviceNames: [],
      port: 0,
      host: "127.0.0.1",
      check: async () => true,
    });
    const url = `http://127.0.0.1:${closed.port}`;
    await closed.close();
    const err = await rejection(createServiceClient(Health, url).check({ service: "" }));
    expect(err.code).toBe(Code.Unavailable);
  });
});
