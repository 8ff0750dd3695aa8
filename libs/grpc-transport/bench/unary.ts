/**
 * Does the lean transport earn its place? Unary echo calls (a 64-byte BytesValue)
 * over h2c on 127.0.0.1, client and server in this one process, for three stacks in
 * the same run:
 *
 * - lean:         createFastGrpcTransport -> createFastUnaryHandler (this package)
 * - connect-node: connect-node's createGrpcTransport -> connectNodeAdapter
 * - grpc-js:      @grpc/grpc-js client -> @grpc/grpc-js server
 *
 * No interceptors anywhere. Prints CPU µs per call (client + server together, from
 * process.cpuUsage) and calls/s at 1 and 16 calls in flight, the median of the rounds,
 * and the ratios against lean. Rounds interleave the stacks so a busy neighbour hurts
 * them alike. `pnpm --filter @gw/grpc-transport bench [rounds] [windowMs]`.
 */
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { loadavg } from "node:os";
import { create, type DescMethodUnary } from "@bufbuild/protobuf";
import { type BytesValue, BytesValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { decode, Echo, encode, grpcJsEchoDefinition } from "../src/conformance.fixture.ts";
import { createFastUnaryHandler, recordUnaryRoutes, type UnaryRoute } from "../src/fast-server.ts";
import { createFastGrpcTransport } from "../src/fast-transport.ts";

const rounds = Number(process.argv[2] ?? 3);
const windowMs = Number(process.argv[3] ?? 1_500);
const LEVELS = [1, 16];
const PAYLOAD = Buffer.alloc(64, 1);
const method = Echo.methods[0] as DescMethodUnary<typeof BytesValueSchema, typeof BytesValueSchema>;
const echoImpl = (req: BytesValue) => create(BytesValueSchema, { value: req.value });

interface Stack {
  name: string;
  call(): Promise<unknown>;
  close(): Promise<void>;
}

async function listen(server: http2.Http2Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closer(server: http2.Http2Server, sessions: Set<http2.ServerHttp2Session>) {
  server.on("session", (s) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  });
  return () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sessions) s.destroy();
    });
}

async function lean(): Promise<Stack> {
  const routes = new Map<string, UnaryRoute>();
  const adapter = connectNodeAdapter({
    grpc: true,
    connect: false,
    grpcWeb: false,
    routes: (router) => recordUnaryRoutes(router, routes).rpc(method, echoImpl),
  });
  const fast = createFastUnaryHandler(routes, { interceptors: [] });
  const server = http2.createServer();
  server.on("stream", (stream, headers, _flags, raw: string[]) => {
    if (!fast(stream, headers))
      adapter(new http2.Http2ServerRequest(stream, headers, {}, raw), new http2.Http2ServerResponse(stream));
  });
  const close = closer(server, new Set());
  const transport = createFastGrpcTransport({ baseUrl: await listen(server) });
  const client = createClient(Echo, transport);
  return {
    name: "lean (this package)",
    call: () => client.echo({ value: PAYLOAD }),
    async close() {
      transport.close();
      await close();
    },
  };
}

async function connectNode(): Promise<Stack> {
  const server = http2.createServer(
    connectNodeAdapter({
      grpc: true,
      connect: false,
      grpcWeb: false,
      routes: (router) => router.rpc(method, echoImpl),
    }),
  );
  const close = closer(server, new Set());
  const client = createClient(Echo, createGrpcTransport({ baseUrl: await listen(server) }));
  return { name: "connect-node", call: () => client.echo({ value: PAYLOAD }), close };
}

async function grpcJs(): Promise<Stack> {
  const server = new grpc.Server();
  server.addService(grpcJsEchoDefinition, {
    echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) =>
      cb(null, encode(decode(call.request))),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const Client = grpc.makeGenericClientConstructor(grpcJsEchoDefinition, "Echo");
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as {
    echo(req: Buffer, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): void;
    close(): void;
  };
  const request = encode(PAYLOAD);
  return {
    name: "@grpc/grpc-js",
    call: () =>
      new Promise((resolve, reject) =>
        client.echo(request, (err, res) => (err ? reject(err) : resolve(decode(res as Buffer)))),
      ),
    async close() {
      client.close();
      server.forceShutdown();
    },
  };
}

interface Sample {
  cpuUsPerCall: number;
  callsPerSec: number;
}

/** Calls in a closed loop with `inFlight` workers for `ms`; CPU and wall time of the window. */
async function measure(stack: Stack, inFlight: number, ms: number): Promise<Sample> {
  let calls = 0;
  let running = true;
  const cpu = process.cpuUsage();
  const start = performance.now();
  const worker = async () => {
    while (running) {
      await stack.call();
      calls++;
    }
  };
  const workers = Array.from({ length: inFlight }, worker);
  await new Promise((r) => setTimeout(r, ms));
  running = false;
  await Promise.all(workers);
  const wall = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  return { cpuUsPerCall: (used.user + used.system) / calls, callsPerSec: calls / wall };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

const makers = [lean, connectNode, grpcJs];
const samples = new Map<string, Sample[]>();
const load = [loadavg()[0] as number];
for (let round = 0; round < rounds; round++) {
  for (const make of makers) {
    const stack = await make();
    try {
      await measure(stack, 16, 300); // warm-up: JIT, sessions
      for (const level of LEVELS) {
        const key = `${stack.name}\t${level}`;
        samples.set(key, [...(samples.get(key) ?? []), await measure(stack, level, windowMs)]);
      }
    } finally {
      await stack.close();
    }
  }
  load.push(loadavg()[0] as number);
}

const names = ["lean (this package)", "connect-node", "@grpc/grpc-js"];
console.log(
  `unary echo, 64-byte payload, client+server in one process, median of ${rounds} rounds of ${windowMs} ms; ` +
    `load average (1 min) ${Math.min(...load).toFixed(1)} to ${Math.max(...load).toFixed(1)}, ${new Date().toISOString()}`,
);
console.log("stack                  in flight  CPU µs/call  calls/s   CPU vs lean  calls/s vs lean");
for (const level of LEVELS) {
  const leanSamples = samples.get(`${names[0]}\t${level}`) ?? [];
  const leanCpu = median(leanSamples.map((s) => s.cpuUsPerCall));
  const leanRate = median(leanSamples.map((s) => s.callsPerSec));
  for (const name of names) {
    const got = samples.get(`${name}\t${level}`) ?? [];
    const cpu = median(got.map((s) => s.cpuUsPerCall));
    const rate = median(got.map((s) => s.callsPerSec));
    console.log(
      `${name.padEnd(22)} ${String(level).padStart(9)}  ${cpu.toFixed(0).padStart(11)}  ${rate.toFixed(0).padStart(7)}  ${`${(cpu / leanCpu).toFixed(2)}x`.padStart(11)}  ${`${(rate / leanRate).toFixed(2)}x`.padStart(15)}`,
    );
  }
}
