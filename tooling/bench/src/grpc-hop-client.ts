/**
 * The client side of the gRPC hop benchmark, run as its own `node` process by
 * grpc-hop.ts: `node grpc-hop-client.ts <kind> <port> <levels,comma> <durationMs> <warmupMs> <sessions>`.
 * For each level it runs a closed loop of grpc.health.v1 Check calls, asks the parent
 * for the server's CPU time at the edges of the window, and reports the result.
 */
import * as http2 from "node:http2";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import * as grpcJs from "@grpc/grpc-js";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import {
  Health,
  HealthCheckRequestSchema,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
} from "@gw/proto/grpc/health/v1/health_pb";
import { createServiceClient, parseServiceTokenKeys } from "@gw/rpc";
import { startTelemetry } from "@gw/runtime";
import { benchKeys, type HopClientKind, type HopMessage } from "./grpc-hop-shared.ts";
import { type ClosedLoop, cpuPercent, measure } from "./measure.ts";
import { Http2SessionPool } from "./session-pool.ts";

const [kind, portArg, levelsArg, durationArg, warmupArg, sessionsArg] = process.argv.slice(2) as [
  HopClientKind,
  string,
  string,
  string,
  string,
  string,
];
const baseUrl = `http://127.0.0.1:${portArg}`;
const timeoutMs = 5_000;

/** Builds the closed-loop call for a client kind, and how to close that client. */
function makeCall(): { call: ClosedLoop; close: () => void } {
  switch (kind) {
    case "gw": {
      const client = createServiceClient(Health, baseUrl, { defaultTimeoutMs: timeoutMs });
      return { call: () => client.check({ service: "" }), close: () => {} };
    }
    case "gw-service": {
      // As a service's client: the process tracer (no exporter, as without
      // OTEL_EXPORTER_OTLP_ENDPOINT) and the identity of operations, which the gateway's
      // access policy allows to call GetPoolDepth.
      startTelemetry({ serviceName: "operations" });
      const client = createServiceClient(MatchingService, baseUrl, {
        defaultTimeoutMs: timeoutMs,
        identity: { name: "operations", keys: parseServiceTokenKeys(benchKeys()) },
        ...(Number(sessionsArg) > 0 ? { sessions: Number(sessionsArg) } : {}),
      });
      return { call: () => client.getPoolDepth({ method: "WT_RUB_C2C", currency: "RUB" }), close: () => {} };
    }
    case "grpc-tuned": {
      // createServiceClient as it was on connect-node: connect-node's gRPC transport
      // on one kept-alive session that refuses server push.
      const sessionManager = new Http2SessionManager(
        baseUrl,
        { pingIntervalMs: 10_000, pingTimeoutMs: 5_000, idleConnectionTimeoutMs: 60_000 },
        { settings: { enablePush: false } },
      );
      const transport = createGrpcTransport({ baseUrl, sessionManager, defaultTimeoutMs: timeoutMs });
      const client = createClient(Health, transport);
      return { call: () => client.check({ service: "" }), close: () => sessionManager.abort() };
    }
    case "grpc-pool": {
      const pool = new Http2SessionPool(baseUrl, Number(sessionsArg));
      const transport = createGrpcTransport({ baseUrl, sessionManager: pool, defaultTimeoutMs: timeoutMs });
      const client = createClient(Health, transport);
      return { call: () => client.check({ service: "" }), close: () => pool.abort() };
    }
    case "grpc-defaults": {
      // The client as @gw/rpc built it before tuning: one session manager with keepalive
      // pings and Node's default HTTP/2 settings.
      const sessionManager = new Http2SessionManager(baseUrl, {
        pingIntervalMs: 10_000,
        pingTimeoutMs: 5_000,
        idleConnectionTimeoutMs: 60_000,
      });
      const transport = createGrpcTransport({ baseUrl, sessionManager, defaultTimeoutMs: timeoutMs });
      const client = createClient(Health, transport);
      return { call: () => client.check({ service: "" }), close: () => sessionManager.abort() };
    }
    case "connect": {
      const sessionManager = new Http2SessionManager(baseUrl);
      const transport = createConnectTransport({
        baseUrl,
        httpVersion: "2",
        sessionManager,
        defaultTimeoutMs: timeoutMs,
      });
      const client = createClient(Health, transport);
      return { call: () => client.check({ service: "" }), close: () => sessionManager.abort() };
    }
    case "grpc-js": {
      const client = new grpcJs.Client(`127.0.0.1:${portArg}`, grpcJs.credentials.createInsecure());
      const request = toBinary(HealthCheckRequestSchema, {
        $typeName: "grpc.health.v1.HealthCheckRequest",
        service: "",
      });
      const call = () =>
        new Promise<HealthCheckResponse>((resolve, reject) => {
          client.makeUnaryRequest(
            "/grpc.health.v1.Health/Check",
            (b: Buffer) => Buffer.from(b),
            (b: Buffer) => fromBinary(HealthCheckResponseSchema, b),
            Buffer.from(request),
            { deadline: Date.now() + timeoutMs },
            (err, res) => (err || !res ? reject(err ?? new Error("no response")) : resolve(res)),
          );
        });
      return { call, close: () => client.close() };
    }
    case "raw": {
      const session = http2.connect(baseUrl);
      const headers = {
        ":method": "POST",
        ":path": "/grpc.health.v1.Health/Check",
        "content-type": "application/grpc+proto",
        te: "trailers",
      };
      const emptyRequest = Buffer.from([0, 0, 0, 0, 0]);
      const call = () =>
        new Promise<void>((resolve, reject) => {
          const stream = session.request(headers);
          let status: string | undefined;
          stream.on("trailers", (t) => {
            status = String(t["grpc-status"]);
          });
          stream.on("data", () => {});
          stream.on("error", reject);
          stream.on("close", () => (status === "0" ? resolve() : reject(new Error(`grpc-status ${status}`))));
          stream.end(emptyRequest);
        });
      return { call, close: () => session.close() };
    }
    default:
      throw new Error(`unknown client kind ${String(kind)}`);
  }
}

let nextId = 0;
const waiting = new Map<number, (usage: NodeJS.CpuUsage) => void>();
process.on("message", (msg: HopMessage) => {
  if (msg.t === "marked") waiting.get(msg.id)?.(msg.usage);
});
/** Asks the parent for the server's CPU time now. */
function serverCpu(): Promise<NodeJS.CpuUsage> {
  const id = nextId++;
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    process.send?.({ t: "mark", id } satisfies HopMessage);
  });
}

if (!process.send) throw new Error("grpc-hop-client runs as a child process of grpc-hop.ts");
const { call, close } = makeCall();
for (const level of levelsArg.split(",").map(Number)) {
  let before: NodeJS.CpuUsage | undefined;
  let after: NodeJS.CpuUsage | undefined;
  const m = await measure(call, {
    concurrency: level,
    durationMs: Number(durationArg),
    warmupMs: Number(warmupArg),
    onWindowStart: async () => {
      before = await serverCpu();
    },
    onWindowEnd: async () => {
      after = await serverCpu();
    },
  });
  const server =
    before && after
      ? { user: after.user - before.user, system: after.system - before.system }
      : { user: 0, system: 0 };
  process.send({
    t: "result",
    result: { ...m, serverCpuPercent: cpuPercent(server, m.durationMs) },
  } satisfies HopMessage);
}
close();
process.send({ t: "done" } satisfies HopMessage);
process.disconnect();
