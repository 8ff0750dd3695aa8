import type { ServiceImpl } from "@connectrpc/connect";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServiceClient } from "./client.ts";
import { Code, ConnectError } from "./errors.ts";
import { metricsRegistry } from "./metrics.ts";
import { type GrpcServer, startGrpcServer } from "./server.ts";

// The hop's duration histograms on a real server (port 0): the labelled series are kept
// per method and code after the first call, and every call still lands in its own.

const matching: Partial<ServiceImpl<typeof MatchingService>> = {
  async getPoolDepth() {
    return { payouts: 1n, freeAmount: "0" };
  },
  async getPoolPayout() {
    throw new ConnectError("no such payout", Code.NotFound);
  },
};

let server: GrpcServer;
beforeAll(async () => {
  server = await startGrpcServer({
    routes: (router) => router.service(MatchingService, matching),
    serviceNames: [MatchingService.typeName],
    port: 0,
    host: "127.0.0.1",
    check: async () => true,
  });
});
afterAll(() => server?.close());

/** The `_count` of a histogram's series with these labels. */
async function count(metric: string, labels: Record<string, string>): Promise<number> {
  const found = await metricsRegistry.getSingleMetric(metric)?.get();
  const sample = found?.values.find(
    (v) =>
      (v as { metricName?: string }).metricName === `${metric}_count` &&
      Object.entries(labels).every(([k, value]) => v.labels[k] === value),
  );
  return sample?.value ?? 0;
}

describe("RPC duration metrics", () => {
  it("counts every call under its method and result code, on both sides", async () => {
    const depth = { method: `${MatchingService.typeName}/GetPoolDepth`, code: "ok" };
    const payout = { method: `${MatchingService.typeName}/GetPoolPayout`, code: "NotFound" };
    const before = {
      server: await count("rpc_server_duration_seconds", depth),
      client: await count("rpc_client_duration_seconds", depth),
      serverFailed: await count("rpc_server_duration_seconds", payout),
      clientFailed: await count("rpc_client_duration_seconds", payout),
    };
    const client = createServiceClient(MatchingService, `http://127.0.0.1:${server.port}`, {
      identity: null,
    });
    for (let i = 0; i < 3; i++) await client.getPoolDepth({});
    for (let i = 0; i < 2; i++) await client.getPoolPayout({}).catch(() => undefined);
    expect(await count("rpc_server_duration_seconds", depth)).toBe(before.server + 3);
    expect(await count("rpc_client_duration_seconds", depth)).toBe(before.client + 3);
    expect(await count("rpc_server_duration_seconds", payout)).toBe(before.serverFailed + 2);
    expect(await count("rpc_client_duration_seconds", payout)).toBe(before.clientFailed + 2);
  });
});
