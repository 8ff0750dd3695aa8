import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Health, HealthCheckResponse_ServingStatus } from "@gw/proto/grpc/health/v1/health_pb";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createServiceClient } from "./client.ts";
import { Code, ConnectError } from "./errors.ts";

// The client side of issue 17: a session of the internal hop may die at any moment of a
// call. Whatever the moment, only the calls on that session fail, with UNAVAILABLE (an
// unknown outcome that callers retry under their idempotency key); the next call gets a
// fresh session; and nothing escapes as an uncaught exception, which would end the
// process.

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
  expect(escaped, "an exception escaped an event handler").toEqual([]);
});

/** A SERVING HealthCheckResponse in one gRPC envelope: flag, length 2, field 1 = 1. */
const SERVING = Buffer.from([0, 0, 0, 0, 2, 8, 1]);

type Moment = "on the request" | "after the headers" | "after the message" | "with a GOAWAY";

/**
 * A gRPC server that answers Health/Check for the service "fine" and, for any other
 * service name, kills the call's session at the moment that name gives.
 */
async function startRogue(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
    s.on("error", () => {});
  });
  server.on("stream", (stream) => {
    stream.on("error", () => {});
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => {
      const body = Buffer.concat(chunks);
      // The request's one message: field 1 (service) is a string at offset 7.
      const moment = body.subarray(7, 7 + (body[6] ?? 0)).toString() as Moment | "fine";
      const session = stream.session;
      if (moment === "on the request") return session?.destroy();
      if (moment === "with a GOAWAY") {
        // The call was never looked at (last stream 0), then the session goes.
        session?.goaway(http2.constants.NGHTTP2_NO_ERROR, 0);
        return setImmediate(() => session?.destroy());
      }
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      if (moment === "after the headers") return session?.destroy();
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      if (moment === "after the message") {
        stream.write(SERVING, () => session?.destroy());
        return;
      }
      stream.end(SERVING);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const s of sessions) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe("a client whose server kills its session", () => {
  const moments: Moment[] = ["on the request", "after the headers", "after the message", "with a GOAWAY"];

  it.each(moments)("%s: the call fails UNAVAILABLE and the next one is served", async (moment) => {
    const rogue = await startRogue();
    try {
      const client = createServiceClient(Health, rogue.url, { identity: null, defaultTimeoutMs: 5_000 });
      expect((await client.check({ service: "fine" })).status).toBe(
        HealthCheckResponse_ServingStatus.SERVING,
      );
      const err = await client.check({ service: moment }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.Unavailable);
      expect((await client.check({ service: "fine" })).status).toBe(
        HealthCheckResponse_ServingStatus.SERVING,
      );
    } finally {
      await rogue.close();
    }
  });
});
