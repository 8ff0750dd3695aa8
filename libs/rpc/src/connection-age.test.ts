import { Health, HealthCheckResponse_ServingStatus } from "@gw/proto/grpc/health/v1/health_pb";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createServiceClient } from "./client.ts";
import { sessionsAged } from "./metrics.ts";
import { type GrpcServer, startGrpcServer } from "./server.ts";

// A per-connection balancer (a Kubernetes Service) pins an HTTP/2 client to one replica
// for as long as its session lives. The server's maximum connection age ends every
// session after a while with GOAWAY, so clients reconnect and spread over the replicas
// as they come and go; the calls themselves must not notice.

const agedSoFar = async () => (await sessionsAged.get()).values[0]?.value ?? 0;

describe("maximum connection age", () => {
  let server: GrpcServer;
  beforeAll(async () => {
    server = await startGrpcServer({
      routes: () => {},
      serviceNames: [],
      port: 0,
      host: "127.0.0.1",
      check: async () => true,
      maxConnectionAgeMs: 200,
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("ends sessions at their age with GOAWAY, and the client's calls go on over new sessions without an error", async () => {
    const client = createServiceClient(Health, `http://127.0.0.1:${server.port}`);
    const before = await agedSoFar();
    const failures: unknown[] = [];
    let calls = 0;
    let running = true;
    const loop = (async () => {
      while (running) {
        try {
          const res = await client.check({ service: "" });
          expect(res.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
          calls++;
        } catch (err) {
          failures.push(err);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    try {
      // Two sessions aged: the second was one the client opened after the first GOAWAY.
      await vi.waitFor(async () => expect(await agedSoFar()).toBeGreaterThanOrEqual(before + 2), {
        timeout: 20_000,
        interval: 50,
      });
    } finally {
      running = false;
      await loop;
    }
    expect(failures).toEqual([]);
    expect(calls).toBeGreaterThan(2);
  });
});
