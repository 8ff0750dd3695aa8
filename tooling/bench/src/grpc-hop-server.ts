/**
 * The server side of the gRPC hop benchmark, run as its own `node` process by
 * grpc-hop.ts. It serves grpc.health.v1 Check and answers its parent over IPC:
 * `{ t: "cpu" }` with its CPU time so far, `{ t: "stop" }` by closing and exiting.
 *
 * Modes: `defaults` is connect-node's adapter on `http2.createServer()` with Node's
 * defaults (the baseline), `tuned` is our `startGrpcServer`, `connect` serves the
 * Connect protocol (not gRPC) with the same HTTP/2 settings as `tuned`.
 */
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Health } from "@gw/proto/grpc/health/v1/health_pb";
import { healthService, rpcMetricsInterceptor, startGrpcServer } from "@gw/rpc";
import { type HopServerMode, tuneHttp2Server } from "./grpc-hop-shared.ts";

const mode = process.argv[2] as HopServerMode;
const host = "127.0.0.1";
const ready = async () => true;

async function start(): Promise<{ port: number; close: () => Promise<void> }> {
  if (mode === "tuned")
    return startGrpcServer({ routes: () => {}, serviceNames: [], port: 0, host, check: ready });
  const grpc = mode === "defaults";
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
  const server = grpc ? http2.createServer(handler) : tuneHttp2Server(handler);
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
