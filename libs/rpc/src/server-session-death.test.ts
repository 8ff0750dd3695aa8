import * as http2 from "node:http2";
import { Health, HealthCheckResponse_ServingStatus } from "@gw/proto/grpc/health/v1/health_pb";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createServiceClient } from "./client.ts";
import { startGrpcServer } from "./server.ts";

// The server side of issue 17: startGrpcServer, with its maximum connection age, while its
// clients' sessions die at every moment of a call. No handler may throw, since a throw
// in an event handler ends the whole process.

/** Exceptions that escaped an event handler; vitest's own listener keeps the worker up. */
const escaped: unknown[] = [];
const onEscape = (err: unknown) => escaped.push(err);

beforeEach(() => {
  escaped.length = 0;
  process.on("uncaughtException", onEscape);
  process.on("unhandledRejection", onEscape);
});

afterEach(async () => {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  process.off("uncaughtException", onEscape);
  process.off("unhandledRejection", onEscape);
  expect(escaped, "an exception escaped a server event handler").toEqual([]);
});

function clientOf(url: string) {
  return createServiceClient(Health, url, { defaultTimeoutMs: 10_000, identity: null });
}

describe("a server whose clients' sessions die at any moment", () => {
  it("keeps serving, and none of its handlers throws", async () => {
    const grpc = await startGrpcServer({
      routes: () => {},
      serviceNames: [],
      port: 0,
      host: "127.0.0.1",
      check: async () => true,
      maxConnectionAgeMs: 50,
    });
    const url = `http://127.0.0.1:${grpc.port}`;
    // A health check in gRPC framing: an empty request message.
    const emptyMessage = Buffer.alloc(5);
    try {
      const moments = ["at once", "on connect", "after the request", "on the response"] as const;
      for (let round = 0; round < 25; round++) {
        await Promise.all(
          moments.map(
            (moment) =>
              new Promise<void>((resolve) => {
                const session = http2.connect(url);
                session.on("error", () => {});
                session.once("close", () => resolve());
                if (moment === "at once") return session.destroy();
                if (moment === "on connect") return session.once("connect", () => session.destroy());
                const stream = session.request({
                  ":method": "POST",
                  ":path": "/grpc.health.v1.Health/Check",
                  "content-type": "application/grpc",
                  te: "trailers",
                });
                stream.on("error", () => {});
                stream.end(emptyMessage);
                if (moment === "after the request") setImmediate(() => session.destroy());
                else stream.once("response", () => session.destroy());
              }),
          ),
        );
      }
      const res = await clientOf(url).check({ service: "" });
      expect(res.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    } finally {
      await grpc.close();
    }
  });
});
