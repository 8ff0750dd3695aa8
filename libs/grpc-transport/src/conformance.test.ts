import { type ChildProcess, fork } from "node:child_process";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { fromBinary } from "@bufbuild/protobuf";
import { BytesValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  decode,
  Echo,
  encode,
  grpcJsEchoDefinition,
  MB,
  type ServerEvent,
  startGrpcJsServer,
  startOurServer,
  type TestServer,
} from "./conformance.fixture.ts";
import { createFastGrpcTransport, type FastTransport } from "./fast-transport.ts";

// Conformance of the lean transport against the stock @grpc/grpc-js, in both
// directions, each against a real server on a free port: our client against a grpc-js
// server, a grpc-js client against our server. Where the two differ on purpose, the
// test asserts our documented behaviour (README.md, "Where it differs from grpc-js").

/** Exceptions that escaped an event handler: none may (it would end a real process). */
const escaped: unknown[] = [];
const onEscape = (err: unknown) => escaped.push(err);
beforeEach(() => {
  escaped.length = 0;
  process.on("uncaughtException", onEscape);
  process.on("unhandledRejection", onEscape);
});
afterEach(async () => {
  await new Promise((resolve) => setImmediate(resolve));
  process.off("uncaughtException", onEscape);
  process.off("unhandledRejection", onEscape);
  expect(escaped, "an exception escaped an event handler").toEqual([]);
});

/** Resolves when the promise does, or fails the test after a bounded wait (never a hang). */
function within<T>(promise: Promise<T>, ms = 15_000): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms).unref(),
    ),
  ]);
}

async function failureOf(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await within(call);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith("not settled")) throw err;
    expect(err).toBeInstanceOf(ConnectError);
    return err as ConnectError;
  }
  throw new Error("the call succeeded");
}

const CODES = Array.from({ length: 16 }, (_, i) => i + 1);
const MESSAGES = [
  "plain ascii",
  "nicht gefunden: Größe ≠ 0, 100% sicher",
  "ошибка: ключ уже использован ✓ 🚀",
  "percent %25 stays %, reserved /?#&=+ and a\ttab",
];
const b64 = (s: string | Uint8Array) => Buffer.from(s).toString("base64");
const BINARY = Buffer.from([0, 1, 2, 0xfe, 0xff, 0x80, 10, 13]);

// ---------------------------------------------------------------------------------------
// Our client -> stock grpc-js server
// ---------------------------------------------------------------------------------------

describe("our client -> @grpc/grpc-js server", () => {
  let server: TestServer;
  let transport: FastTransport;
  let client: ReturnType<typeof createClient<typeof Echo>>;

  beforeAll(async () => {
    server = await startGrpcJsServer();
    transport = createFastGrpcTransport({ baseUrl: server.url });
    client = createClient(Echo, transport);
  });
  afterAll(async () => {
    transport?.close();
    await server?.close();
  });

  it("gets every status code 1..16 with its message, non-ASCII and percent signs included", async () => {
    for (const code of CODES) {
      for (const message of MESSAGES) {
        const err = await failureOf(
          client.echo(
            { value: new Uint8Array() },
            { headers: { "x-act": "fail", "x-code": String(code), "x-message-bin": b64(message) } },
          ),
        );
        expect([Code[err.code], err.rawMessage]).toEqual([Code[code], message]);
      }
    }
  });

  it("reads the google.rpc.Status details of grpc-status-details-bin", async () => {
    const err = await failureOf(
      client.echo(
        { value: new Uint8Array() },
        {
          headers: {
            "x-act": "fail",
            "x-code": String(Code.FailedPrecondition),
            "x-message-bin": b64("mit Details"),
            "x-details": "1",
          },
        },
      ),
    );
    expect([err.code, err.rawMessage]).toEqual([Code.FailedPrecondition, "mit Details"]);
    const [detail] = err.details as { type: string; value: Uint8Array }[];
    expect(detail?.type).toBe("google.protobuf.BytesValue");
    expect(
      Buffer.from(fromBinary(BytesValueSchema, detail?.value ?? new Uint8Array()).value).toString(),
    ).toBe("why");
  });

  it("sends grpc-timeout, which the server sees as its deadline", async () => {
    const res = await client.echo(
      { value: new Uint8Array() },
      { headers: { "x-act": "deadline" }, timeoutMs: 5_000 },
    );
    const left = Number(Buffer.from(res.value).toString());
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(5_000);
  });

  it("sends no grpc-timeout without a deadline", async () => {
    const res = await client.echo({ value: new Uint8Array() }, { headers: { "x-act": "deadline" } });
    expect(Buffer.from(res.value).toString()).toBe("");
  });

  it("keeps a deadline longer than a Node timer can wait (24.8 days) instead of expiring at once", async () => {
    // 50 days: grpc-js's own server wraps a timeout over 2^31 ms to a negative one (and
    // expires the call at once) up to 2^32 ms; past that it waits for the rest.
    const fiftyDays = 50 * 24 * 3_600_000;
    const arrived = server.next((e) => e.t === "arrived");
    const call = client.echo(
      { value: Buffer.from("x") },
      { headers: { "x-act": "wait" }, timeoutMs: fiftyDays },
    );
    await within(arrived);
    // Long enough for a timer that overflowed to 1 ms to have fired.
    await new Promise((r) => setTimeout(r, 20));
    server.release();
    const res = await within(call);
    expect(Buffer.from(res.value).toString()).toBe("x");
  });

  it("fails DEADLINE_EXCEEDED at the deadline, and the server's call is cancelled", async () => {
    const ended = server.next((e) => e.t === "ended");
    const err = await failureOf(
      client.echo({ value: new Uint8Array() }, { headers: { "x-act": "hang" }, timeoutMs: 200 }),
    );
    expect(err.code).toBe(Code.DeadlineExceeded);
    await within(ended);
  });

  it("cancels: an abort fails the call CANCELED and reaches the server's call", async () => {
    const arrived = server.next((e) => e.t === "arrived");
    const ended = server.next((e) => e.t === "ended");
    const abort = new AbortController();
    const call = client.echo(
      { value: new Uint8Array() },
      { headers: { "x-act": "hang" }, signal: abort.signal },
    );
    await within(arrived);
    abort.abort();
    expect((await failureOf(call)).code).toBe(Code.Canceled);
    await within(ended);
  });

  it("carries ASCII and -bin metadata both ways, in headers and trailers", async () => {
    let header: Headers | undefined;
    let trailer: Headers | undefined;
    const res = await client.echo(
      { value: Buffer.from("m") },
      {
        headers: { "x-a": "value with spaces", "x-b-bin": b64(BINARY) },
        onHeader: (h) => {
          header = h;
        },
        onTrailer: (t) => {
          trailer = t;
        },
      },
    );
    expect(Buffer.from(res.value).toString()).toBe("m");
    expect(header?.get("x-h")).toBe("value with spaces");
    expect(trailer?.get("x-t")).toBe("value with spaces");
    expect(Buffer.from(header?.get("x-h-bin") ?? "", "base64")).toEqual(BINARY);
    expect(Buffer.from(trailer?.get("x-t-bin") ?? "", "base64")).toEqual(BINARY);
  });

  it("sends and receives messages of several MB", async () => {
    const big = Buffer.alloc(8 * MB, 3);
    const res = await within(client.echo({ value: big }));
    expect(Buffer.compare(Buffer.from(res.value), big)).toBe(0);
    const sized = await within(
      client.echo({ value: new Uint8Array() }, { headers: { "x-act": "size", "x-size": String(12 * MB) } }),
    );
    expect(sized.value.length).toBe(12 * MB);
  });

  it("gets RESOURCE_EXHAUSTED for a request over the server's limit (grpc-js: 16 MiB here)", async () => {
    const err = await failureOf(client.echo({ value: Buffer.alloc(17 * MB) }));
    expect(err.code).toBe(Code.ResourceExhausted);
    // The session is still good.
    expect((await client.echo({ value: Buffer.from("after") })).value).toEqual(Buffer.from("after"));
  });

  it("refuses a response over its own 64 MiB limit with RESOURCE_EXHAUSTED", async () => {
    const err = await failureOf(
      client.echo(
        { value: new Uint8Array() },
        { headers: { "x-act": "size", "x-size": String(64 * MB + 1) } },
      ),
    );
    expect(err.code).toBe(Code.ResourceExhausted);
  });
});

describe("our client -> @grpc/grpc-js server that ends its sessions (GOAWAY, max connection age)", () => {
  let server: TestServer;
  let transport: FastTransport | undefined;
  beforeAll(async () => {
    server = await startGrpcJsServer({
      "grpc.max_connection_age_ms": 150,
      "grpc.max_connection_age_grace_ms": 5_000,
    });
  });
  afterAll(async () => {
    transport?.close();
    await server?.close();
  });

  it("goes on over new sessions without a failed call", async () => {
    transport = createFastGrpcTransport({ baseUrl: server.url });
    const client = createClient(Echo, transport);
    const failures: unknown[] = [];
    for (let i = 0; i < 5_000 && server.connections() < 3; i++) {
      try {
        await client.echo({ value: Buffer.from([i & 0xff]) });
      } catch (err) {
        failures.push(err);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(failures).toEqual([]);
    expect(server.connections()).toBeGreaterThanOrEqual(3);
  });
});

// ---------------------------------------------------------------------------------------
// Stock grpc-js client -> our server
// ---------------------------------------------------------------------------------------

type EchoStub = grpc.Client & {
  echo(
    req: Buffer,
    md: grpc.Metadata,
    options: grpc.CallOptions,
    cb: (err: grpc.ServiceError | null, res?: Buffer) => void,
  ): grpc.ClientUnaryCall;
};

const EchoClient = grpc.makeGenericClientConstructor(grpcJsEchoDefinition, "Echo");

function grpcJsClient(port: number, options: grpc.ClientOptions = {}): EchoStub {
  return new EchoClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    "grpc.max_receive_message_length": 80 * MB,
    ...options,
  }) as unknown as EchoStub;
}

interface JsResult {
  err: grpc.ServiceError | null;
  value: Buffer | undefined;
  header: grpc.Metadata | undefined;
  status: grpc.StatusObject | undefined;
}

function jsCall(
  client: EchoStub,
  payload: Uint8Array,
  metadata: Record<string, string | Buffer> = {},
  options: grpc.CallOptions = {},
): { call: grpc.ClientUnaryCall; result: Promise<JsResult> } {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  let call!: grpc.ClientUnaryCall;
  const result = new Promise<JsResult>((resolve) => {
    let header: grpc.Metadata | undefined;
    let status: grpc.StatusObject | undefined;
    let done: { err: grpc.ServiceError | null; res?: Buffer } | undefined;
    const finish = () => {
      if (done !== undefined && status !== undefined)
        resolve({
          err: done.err,
          value: done.res === undefined ? undefined : Buffer.from(decode(done.res)),
          header,
          status,
        });
    };
    call = client.echo(encode(payload), md, options, (err, res) => {
      done = { err, ...(res === undefined ? {} : { res }) };
      finish();
    });
    call.on("metadata", (m: grpc.Metadata) => {
      header = m;
    });
    call.on("status", (s: grpc.StatusObject) => {
      status = s;
      finish();
    });
  });
  return { call, result: within(result) };
}

describe("@grpc/grpc-js client -> our server", () => {
  let server: TestServer;
  let client: EchoStub;
  beforeAll(async () => {
    server = await startOurServer();
    client = grpcJsClient(server.port);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it("gets every status code 1..16 with its message, non-ASCII and percent signs included", async () => {
    for (const code of CODES) {
      for (const message of MESSAGES) {
        const { result } = jsCall(client, new Uint8Array(), {
          "x-act": "fail",
          "x-code": String(code),
          "x-message-bin": Buffer.from(message),
        });
        const { err } = await result;
        expect([grpc.status[err?.code ?? 0], err?.details]).toEqual([grpc.status[code], message]);
      }
    }
  });

  it("sends the details as google.rpc.Status in grpc-status-details-bin", async () => {
    const { result } = jsCall(client, new Uint8Array(), {
      "x-act": "fail",
      "x-code": String(Code.FailedPrecondition),
      "x-message-bin": Buffer.from("mit Details"),
      "x-details": "1",
    });
    const { err } = await result;
    expect(err?.code).toBe(grpc.status.FAILED_PRECONDITION);
    const [bin] = err?.metadata.get("grpc-status-details-bin") ?? [];
    expect(bin).toBeInstanceOf(Buffer);
    // Decoded with the same hand-written layout the grpc-js server fixture encodes.
    const { statusDetailsBin } = await import("./conformance.fixture.ts");
    expect(bin).toEqual(statusDetailsBin(Code.FailedPrecondition, "mit Details", "why"));
  });

  it("honours grpc-timeout: the handler sees the deadline", async () => {
    const { result } = jsCall(
      client,
      new Uint8Array(),
      { "x-act": "deadline" },
      { deadline: Date.now() + 5_000 },
    );
    const { err, value } = await result;
    expect(err).toBeNull();
    const left = Number(value?.toString());
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(5_000);
  });

  it("keeps a deadline longer than a Node timer can wait (24.8 days) instead of expiring at once", async () => {
    const arrived = server.next((e) => e.t === "arrived");
    const { result } = jsCall(
      client,
      Buffer.from("x"),
      { "x-act": "wait" },
      { deadline: Date.now() + 30 * 24 * 3_600_000 },
    );
    await within(arrived);
    // Long enough for a timer that overflowed to 1 ms to have fired.
    await new Promise((r) => setTimeout(r, 20));
    server.release();
    const { err, value } = await result;
    expect(err?.code ?? grpc.status.OK).toBe(grpc.status.OK);
    expect(value?.toString()).toBe("x");
  });

  it("answers DEADLINE_EXCEEDED at the deadline, and the handler's signal aborts", async () => {
    const ended = server.next((e) => e.t === "ended");
    const { result } = jsCall(client, new Uint8Array(), { "x-act": "hang" }, { deadline: Date.now() + 200 });
    const { err } = await result;
    expect(err?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    await within(ended);
  });

  it("cancels: the client's cancel reaches the handler's signal", async () => {
    const arrived = server.next((e) => e.t === "arrived");
    const ended = server.next((e) => e.t === "ended");
    const { call, result } = jsCall(client, new Uint8Array(), { "x-act": "hang" });
    await within(arrived);
    call.cancel();
    expect((await result).err?.code).toBe(grpc.status.CANCELLED);
    await within(ended);
  });

  it("carries ASCII and -bin metadata both ways, in headers and trailers", async () => {
    const { result } = jsCall(client, Buffer.from("m"), { "x-a": "value with spaces", "x-b-bin": BINARY });
    const { err, value, header, status } = await result;
    expect(err).toBeNull();
    expect(value?.toString()).toBe("m");
    expect(header?.get("x-h")).toEqual(["value with spaces"]);
    expect(header?.get("x-h-bin")).toEqual([BINARY]);
    expect(status?.metadata.get("x-t")).toEqual(["value with spaces"]);
    expect(status?.metadata.get("x-t-bin")).toEqual([BINARY]);
  });

  it("receives and answers messages of several MB", async () => {
    const big = Buffer.alloc(8 * MB, 3);
    const echoed = await jsCall(client, big).result;
    expect(echoed.err).toBeNull();
    expect(Buffer.compare(echoed.value ?? Buffer.alloc(0), big)).toBe(0);
    const sized = await jsCall(client, new Uint8Array(), { "x-act": "size", "x-size": String(12 * MB) })
      .result;
    expect(sized.value?.length).toBe(12 * MB);
  });

  it("answers RESOURCE_EXHAUSTED to a request over its 64 MiB limit, and keeps serving", async () => {
    const { err } = await jsCall(client, Buffer.alloc(64 * MB + 1)).result;
    expect(err?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect((await jsCall(client, Buffer.from("after")).result).value?.toString()).toBe("after");
  });

  it("serves a gzip-compressing grpc-js client (the lean path leaves it to connect-node)", async () => {
    const gzipping = grpcJsClient(server.port, { "grpc.default_compression_algorithm": 2 });
    try {
      const { err, value } = await jsCall(gzipping, Buffer.alloc(4096, 9)).result;
      expect(err).toBeNull();
      expect(value).toEqual(Buffer.alloc(4096, 9));
    } finally {
      gzipping.close();
    }
  });

  it("sends GOAWAY gracefully: a call in flight finishes, and the next call reconnects", async () => {
    await jsCall(client, Buffer.from("warm")).result;
    const before = server.connections();
    const arrived = server.next((e) => e.t === "arrived");
    const inFlight = jsCall(client, Buffer.from("in flight"), { "x-act": "wait" });
    await within(arrived);
    server.goAway();
    server.release();
    const first = await inFlight.result;
    expect([first.err, first.value?.toString()]).toEqual([null, "in flight"]);
    const next = await jsCall(client, Buffer.from("next")).result;
    expect([next.err, next.value?.toString()]).toEqual([null, "next"]);
    expect(server.connections()).toBe(before + 1);
  });
});

// ---------------------------------------------------------------------------------------
// A server that dies mid-call (killed child process), both directions
// ---------------------------------------------------------------------------------------

async function startChild(
  kind: "grpc-js" | "ours",
): Promise<{ child: ChildProcess; port: number; arrived: Promise<void> }> {
  const child = fork(new URL("./conformance.child.ts", import.meta.url), [kind], { stdio: "inherit" });
  let arrive!: () => void;
  const arrived = new Promise<void>((resolve) => {
    arrive = resolve;
  });
  const port = await within(
    new Promise<number>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`the server exited with ${code}`)));
      child.on("message", (msg: { t: "ready"; port: number } | ServerEvent) => {
        if (msg.t === "ready") resolve(msg.port);
        if (msg.t === "arrived") arrive();
      });
    }),
  );
  return { child, port, arrived };
}

function kill(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

describe("a server killed mid-call", () => {
  let child: ChildProcess | undefined;
  afterEach(async () => {
    if (child) await kill(child);
    child = undefined;
  });

  it("fails our client's call UNAVAILABLE (no deadline set: never a hang), and the next one too", async () => {
    const started = await startChild("grpc-js");
    child = started.child;
    const transport = createFastGrpcTransport({ baseUrl: `http://127.0.0.1:${started.port}` });
    try {
      const client = createClient(Echo, transport);
      const failed = failureOf(client.echo({ value: new Uint8Array() }, { headers: { "x-act": "hang" } }));
      await within(started.arrived);
      await kill(started.child);
      expect((await failed).code).toBe(Code.Unavailable);
      expect((await failureOf(client.echo({ value: new Uint8Array() }))).code).toBe(Code.Unavailable);
    } finally {
      transport.close();
    }
  });

  it("fails a grpc-js client's call UNAVAILABLE", async () => {
    const started = await startChild("ours");
    child = started.child;
    const client = grpcJsClient(started.port);
    try {
      const { result } = jsCall(client, new Uint8Array(), { "x-act": "hang" });
      await within(started.arrived);
      await kill(started.child);
      expect((await result).err?.code).toBe(grpc.status.UNAVAILABLE);
    } finally {
      client.close();
    }
  });
});

describe("a server whose grpc-message is not valid percent-encoding", () => {
  it("reaches our client as grpc-js reads it: the code, and the message as sent", async () => {
    // Not grpc-js (it encodes properly) but a server that sends a bare "%", which the
    // gRPC spec tells clients to pass on undecoded rather than fail on.
    const server = http2.createServer();
    server.on("stream", (stream) => {
      stream.on("data", () => {});
      stream.on("end", () =>
        stream.respond(
          {
            ":status": 200,
            "content-type": "application/grpc",
            "grpc-status": "13",
            "grpc-message": "100% broken",
          },
          { endStream: true },
        ),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const transport = createFastGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` });
    const js = grpcJsClient(port);
    try {
      const ours = await failureOf(createClient(Echo, transport).echo({ value: new Uint8Array() }));
      const theirs = (await jsCall(js, new Uint8Array()).result).err;
      expect([theirs?.code, theirs?.details]).toEqual([grpc.status.INTERNAL, "100% broken"]);
      expect([ours.code, ours.rawMessage]).toEqual([Code.Internal, "100% broken"]);
    } finally {
      js.close();
      transport.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
