/**
 * Servers for conformance.test.ts: one echo service, served by the stock @grpc/grpc-js
 * server and by ours (createFastUnaryHandler on node:http2, connect-node behind it as
 * in @gw/rpc's startGrpcServer). Each call's metadata says what the handler does, so
 * both servers behave alike and one test can run against either. Also run as a child
 * process by conformance.child.ts, for a server that is killed mid-call.
 */
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create, createFileRegistry, type DescMethodUnary, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { GenService } from "@bufbuild/protobuf/codegenv2";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  type BytesValue,
  BytesValueSchema,
  FileDescriptorProtoSchema,
  file_google_protobuf_wrappers,
} from "@bufbuild/protobuf/wkt";
import { type Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { createFastUnaryHandler, recordUnaryRoutes, type UnaryRoute } from "./fast-server.ts";

/** `service gw.test.Echo { rpc Echo(google.protobuf.BytesValue) returns (google.protobuf.BytesValue); }` */
const registry = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "gw/test/echo.proto",
    package: "gw.test",
    syntax: "proto3",
    dependency: ["google/protobuf/wrappers.proto"],
    service: [
      {
        name: "Echo",
        method: [
          {
            name: "Echo",
            inputType: ".google.protobuf.BytesValue",
            outputType: ".google.protobuf.BytesValue",
          },
        ],
      },
    ],
  }),
  (name) => (name === "google/protobuf/wrappers.proto" ? file_google_protobuf_wrappers : undefined),
);
const echoService = registry.getService("gw.test.Echo");
if (echoService === undefined) throw new Error("gw.test.Echo did not build");
export const Echo = echoService as GenService<{
  echo: { methodKind: "unary"; input: typeof BytesValueSchema; output: typeof BytesValueSchema };
}>;
const echoMethod = Echo.methods[0] as DescMethodUnary<typeof BytesValueSchema, typeof BytesValueSchema>;
export const ECHO_PATH = "/gw.test.Echo/Echo";

/** What a call asks its handler to do, in the request metadata `x-act`. */
export type Act =
  /** Answer the payload back; copy `x-a` and `x-b-bin` into `x-h`/`x-h-bin` headers and `x-t`/`x-t-bin` trailers. */
  | "echo"
  /** Answer `x-size` bytes. */
  | "size"
  /** Fail with `x-code` and the UTF-8 message in `x-message-bin`; with `x-details: 1` a StringValue detail too. */
  | "fail"
  /** Never answer; tell the test the call arrived and when its handler saw it end. */
  | "hang"
  /** Answer the deadline the handler saw, in ms from now, as the payload (decimal text; empty for none). */
  | "deadline"
  /** Wait until the test calls release(), then echo. */
  | "wait";

/** What the handlers report to the test (and, from a child, to the parent). */
export type ServerEvent = { t: "arrived"; act: Act } | { t: "ended"; act: Act; peer: string };

export interface TestServer {
  port: number;
  url: string;
  /** Every event so far, in order. */
  events: ServerEvent[];
  /** Resolves with the first event after now that matches. */
  next(match: (e: ServerEvent) => boolean): Promise<ServerEvent>;
  /** Connections that made calls (grpc-js: distinct peers) or began (ours: sessions). */
  connections(): number;
  /** Lets the calls waiting in act "wait" answer. */
  release(): void;
  /** Sends GOAWAY on every session (ours only; grpc-js does it by max connection age). */
  goAway(): void;
  close(): Promise<void>;
}

export const MB = 1024 * 1024;

export function encode(value: Uint8Array): Buffer {
  return Buffer.from(toBinary(BytesValueSchema, create(BytesValueSchema, { value })));
}

export function decode(bytes: Uint8Array): Uint8Array {
  return fromBinary(BytesValueSchema, bytes).value;
}

/** google.rpc.Status { code = 1; message = 2; repeated Any details = 3 }, written by hand. */
export function statusDetailsBin(code: number, message: string, detailText: string): Buffer {
  const detail = toBinary(BytesValueSchema, create(BytesValueSchema, { value: Buffer.from(detailText) }));
  const any = new BinaryWriter()
    .tag(1, WireType.LengthDelimited)
    .string("type.googleapis.com/google.protobuf.BytesValue")
    .tag(2, WireType.LengthDelimited)
    .bytes(detail)
    .finish();
  const w = new BinaryWriter();
  w.tag(1, WireType.Varint).int32(code);
  w.tag(2, WireType.LengthDelimited).string(message);
  w.tag(3, WireType.LengthDelimited).bytes(any);
  return Buffer.from(w.finish());
}

/** The method definition of the echo service for grpc-js, bytes in and out. */
export const grpcJsEchoDefinition: grpc.ServiceDefinition = {
  echo: {
    path: ECHO_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (b: Buffer) => b,
    responseDeserialize: (b: Buffer) => b,
  },
};

let forward: ((e: ServerEvent) => void) | undefined;

/** Also hands every event to `fn` (conformance.child.ts: to its parent over IPC). */
export function forwardEvents(fn: (e: ServerEvent) => void): void {
  forward = fn;
}

function reporter() {
  const events: ServerEvent[] = [];
  const waiters: { match: (e: ServerEvent) => boolean; resolve: (e: ServerEvent) => void }[] = [];
  const releases: (() => void)[] = [];
  return {
    events,
    peers: new Set<string>(),
    report(e: ServerEvent) {
      events.push(e);
      forward?.(e);
      for (const w of waiters.splice(0)) {
        if (w.match(e)) w.resolve(e);
        else waiters.push(w);
      }
    },
    next(match: (e: ServerEvent) => boolean): Promise<ServerEvent> {
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
    waitRelease: () => new Promise<void>((resolve) => releases.push(resolve)),
    release() {
      for (const r of releases.splice(0)) r();
    },
  };
}

/** The stock grpc-js server, with a 16 MiB receive limit (its default is 4 MiB). */
export async function startGrpcJsServer(options: grpc.ServerOptions = {}): Promise<TestServer> {
  const r = reporter();
  const server = new grpc.Server({ "grpc.max_receive_message_length": 16 * MB, ...options });
  const echo = (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
    const md = call.metadata;
    const act = (md.get("x-act")[0] ?? "echo") as Act;
    const peer = call.getPeer();
    r.peers.add(peer);
    const text = (key: string) => String(md.get(key)[0] ?? "");
    switch (act) {
      case "echo": {
        const header = new grpc.Metadata();
        const trailer = new grpc.Metadata();
        const a = md.get("x-a")[0];
        const b = md.get("x-b-bin")[0];
        if (a !== undefined) {
          header.set("x-h", a);
          trailer.set("x-t", a);
        }
        if (b !== undefined) {
          header.set("x-h-bin", b);
          trailer.set("x-t-bin", b);
        }
        call.sendMetadata(header);
        callback(null, encode(decode(call.request)), trailer);
        return;
      }
      case "size":
        callback(null, encode(Buffer.alloc(Number(text("x-size")), 7)));
        return;
      case "fail": {
        const code = Number(text("x-code"));
        const message = Buffer.from(md.get("x-message-bin")[0] ?? "").toString("utf8");
        const trailer = new grpc.Metadata();
        if (text("x-details") === "1")
          trailer.set("grpc-status-details-bin", statusDetailsBin(code, message, "why"));
        callback({ code, details: message, metadata: trailer });
        return;
      }
      case "deadline": {
        const deadline = call.getDeadline();
        // grpc-js gives the deadline as a Date or as milliseconds since the epoch.
        const left = (deadline instanceof Date ? deadline.getTime() : Number(deadline)) - Date.now();
        callback(null, encode(Buffer.from(Number.isFinite(left) ? String(left) : "")));
        return;
      }
      case "hang":
        call.once("cancelled", () => r.report({ t: "ended", act, peer }));
        r.report({ t: "arrived", act });
        return;
      case "wait":
        r.report({ t: "arrived", act });
        void r.waitRelease().then(() => callback(null, encode(decode(call.request))));
        return;
    }
  };
  server.addService(grpcJsEchoDefinition, { echo });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    events: r.events,
    next: r.next,
    connections: () => r.peers.size,
    release: r.release,
    goAway() {
      throw new Error("grpc-js sends GOAWAY by grpc.max_connection_age_ms");
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown();
        resolve();
      }),
  };
}

/** Our server: the lean unary handler on node:http2, connect-node for anything else. */
export async function startOurServer(): Promise<TestServer> {
  const r = reporter();
  const impl = async (req: BytesValue, ctx: HandlerContext): Promise<{ value: Uint8Array }> => {
    const md = ctx.requestHeader;
    const act = (md.get("x-act") ?? "echo") as Act;
    const peer = "ours";
    switch (act) {
      case "echo": {
        const a = md.get("x-a");
        const b = md.get("x-b-bin");
        if (a !== null) {
          ctx.responseHeader.set("x-h", a);
          ctx.responseTrailer.set("x-t", a);
        }
        if (b !== null) {
          ctx.responseHeader.set("x-h-bin", b);
          ctx.responseTrailer.set("x-t-bin", b);
        }
        return { value: req.value };
      }
      case "size":
        return { value: Buffer.alloc(Number(md.get("x-size")), 7) };
      case "fail": {
        const code = Number(md.get("x-code")) as Code;
        const message = Buffer.from(md.get("x-message-bin") ?? "", "base64").toString("utf8");
        const details =
          md.get("x-details") === "1"
            ? [{ desc: BytesValueSchema, value: create(BytesValueSchema, { value: Buffer.from("why") }) }]
            : [];
        throw new ConnectError(message, code, undefined, details);
      }
      case "deadline": {
        const left = ctx.timeoutMs();
        return { value: Buffer.from(left === undefined ? "" : String(left)) };
      }
      case "hang":
        r.report({ t: "arrived", act });
        await new Promise<void>((resolve) => {
          ctx.signal.addEventListener("abort", () => resolve(), { once: true });
        });
        r.report({ t: "ended", act, peer });
        throw ConnectError.from(ctx.signal.reason);
      case "wait":
        r.report({ t: "arrived", act });
        await r.waitRelease();
        return { value: req.value };
    }
  };
  // As @gw/rpc's startGrpcServer: the route registered with connect's router through
  // the recording wrapper, so connect-node serves what the lean path leaves to it.
  const routes = new Map<string, UnaryRoute>();
  const fallback = connectNodeAdapter({
    grpc: true,
    connect: false,
    grpcWeb: false,
    routes: (router) => recordUnaryRoutes(router, routes).rpc(echoMethod, impl),
  });
  const fast = createFastUnaryHandler(routes, { interceptors: [] });
  const server = http2.createServer({ settings: { initialWindowSize: 4 * MB } });
  const sessions = new Set<http2.ServerHttp2Session>();
  let begun = 0;
  server.on("session", (session) => {
    begun++;
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  server.on("stream", (stream, headers, _flags, rawHeaders: string[]) => {
    if (fast(stream, headers)) return;
    fallback(
      new http2.Http2ServerRequest(stream, headers, {}, rawHeaders),
      new http2.Http2ServerResponse(stream),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    events: r.events,
    next: r.next,
    connections: () => begun,
    release: r.release,
    goAway() {
      for (const s of sessions) s.close();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sessions) s.destroy();
      }),
  };
}
