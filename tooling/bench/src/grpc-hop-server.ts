/**
 * The server side of the gRPC hop benchmark, run as its own `node` process by
 * grpc-hop.ts. It serves grpc.health.v1 Check and answers its parent over IPC:
 * `{ t: "cpu" }` with its CPU time so far, `{ t: "stop" }` by closing and exiting.
 *
 * Modes: `defaults` is connect-node's adapter on `http2.createServer()` with Node's
 * defaults (the baseline), `tuned` is connect-node's adapter with the HTTP/2 settings
 * startGrpcServer had on connect-node, `connect` serves the Connect protocol (not gRPC)
 * with the same settings, `gw` is our `startGrpcServer` (@grpc/grpc-js) serving health
 * alone, `gw-service` is `startGrpcServer` set up as
 * `startGrpcService` sets it up for a service (the process tracer without an exporter,
 * token checks under the gateway's access policy, the runtime's interceptors) serving
 * MatchingService/GetPoolDepth, and `raw` answers the same bytes straight from
 * node:http2 (the floor of what the hop can cost).
 */
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createLogger } from "@gw/log";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { Health } from "@gw/proto/grpc/health/v1/health_pb";
import { healthService, parseServiceTokenKeys, rpcMetricsInterceptor, startGrpcServer } from "@gw/rpc";
import { serviceInterceptors, startTelemetry } from "@gw/runtime";
import { benchKeys, type HopServerMode, tuneHttp2Server } from "./grpc-hop-shared.ts";

const mode = process.argv[2] as HopServerMode;
const host = "127.0.0.1";
const ready = async () => true;

/** A SERVING HealthCheckResponse in one gRPC envelope: flag, length 2, field 1 = 1. */
const SERVING = Buffer.from([0, 0, 0, 0, 2, 8, 1]);

/** The floor: the same exchange on node:http2 with nothing of connect-node in the way. */
function rawServer(): http2.Http2Server {
  const server = http2.createServer();
  server.on("stream", (stream) => {
    stream.on("data", () => {});
    stream.on("end", () => {
      stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(SERVING);
    });
  });
  return server;
}

async function start(): Promise<{ port: number; close: () => Promise<void> }> {
  if (mode === "gw")
    return startGrpcServer({ routes: () => {}, serviceNames: [], port: 0, host, check: ready });
  if (mode === "gw-service") {
    // As startGrpcService does it, without Postgres and NATS (the handler needs neither).
    startTelemetry({ serviceName: "matching" });
    const logger = createLogger("matching", "info");
    return startGrpcServer({
      interceptors: serviceInterceptors(logger),
      auth: { keys: parseServiceTokenKeys(benchKeys()) },
      routes: (router) =>
        router.service(MatchingService, {
          async getPoolDepth() {
            return { payouts: 3n, freeAmount: "1500.00" };
          },
        }),
      serviceNames: [MatchingService.typeName],
      port: 0,
      host,
      check: ready,
    });
  }
  if (mode === "raw") return listen(rawServer());
  const grpc = mode === "defaults" || mode === "tuned";
  const handler = connectNodeAdapter({
    grpc,
    connect: !grpc,
    grpcWeb: false,
    interceptors: [rpcMetricsInterceptor],
    routes: (router) =>
      router.service(
        Health,
        healthService([], ready, () => false),
      ),
  });
  return listen(mode === "defaults" ? http2.createServer(handler) : tuneHttp2Server(handler));
}

async function listen(server: http2.Http2Server): Promise<{ port: number; close: () => Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
      }),
  };
}

if (!process.send) throw new Error("grpc-hop-server runs as a child process of grpc-hop.ts");
const server = await start();
process.on("message", async (msg: { t: string }) => {
  if (msg.t === "cpu") process.send?.({ t: "cpu", usage: process.cpuUsage() });
  if (msg.t === "stop") {
    // Bounded: idle client sessions may keep close() waiting, and the run is over anyway.
    await Promise.race([server.close(), new Promise((r) => setTimeout(r, 1000))]);
    process.exit(0);
  }
});
process.send({ t: "ready", port: server.port });
