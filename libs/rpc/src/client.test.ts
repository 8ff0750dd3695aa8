import { Health, HealthCheckResponse_ServingStatus } from "@gw/proto/grpc/health/v1/health_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServiceClient, Http2SessionPool, SESSIONS_PER_TARGET } from "./client.ts";
import { type GrpcServer, startGrpcServer } from "./server.ts";

describe("createServiceClient", () => {
  let server: GrpcServer;
  let baseUrl: string;

  beforeAll(async () => {
    server = await startGrpcServer({
      routes: () => {},
      serviceNames: [],
      port: 0,
      host: "127.0.0.1",
      check: async () => true,
    });
    baseUrl = `http://127.0.0.1:${server.port}`;
  });
  afterAll(() => server.close());

  it("answers many concurrent calls over its pool of sessions", async () => {
    const client = createServiceClient(Health, baseUrl);
    const answers = await Promise.all(Array.from({ length: 32 }, () => client.check({ service: "" })));
    expect(answers.every((a) => a.status === HealthCheckResponse_ServingStatus.SERVING)).toBe(true);
  });

  it("spreads calls over distinct HTTP/2 sessions in turn", async () => {
    const pool = new Http2SessionPool(baseUrl);
    const headers = { "content-type": "application/grpc", te: "trailers" };
    const streams = await Promise.all(
      Array.from({ length: SESSIONS_PER_TARGET * 2 }, () =>
        pool.request("POST", "/grpc.health.v1.Health/Check", headers, {}),
      ),
    );
    const sessions = new Set(streams.map((s) => s.session));
    expect(sessions.size).toBe(SESSIONS_PER_TARGET);
    expect(streams[0]?.session).toBe(streams[SESSIONS_PER_TARGET]?.session);
    // Aborting the pool destroys these unfinished streams with an error nobody awaits.
    for (const stream of streams) stream.on("error", () => {});
    pool.abort();
  });

  it("refuses an empty pool", () => {
    expect(() => new Http2SessionPool(baseUrl, 0)).toThrow(/at least one session/);
  });
});
