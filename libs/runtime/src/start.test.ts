import { randomBytes } from "node:crypto";
import { once } from "node:events";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { createTestDatabase, type FaultProxy, startFaultProxy, type TestDatabase } from "@gw/db";
import { Health, HealthCheckResponse_ServingStatus as Status } from "@gw/proto/grpc/health/v1/health_pb";
import { createServiceClient } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcServiceConfig, type RunningService, startGrpcService } from "./index.ts";

const migrationsFolder = fileURLToPath(new URL("../../db/test-fixtures/migrations-alpha", import.meta.url));

/** A port free now: the placeholder server and the real one must share it. */
async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

let testDb: TestDatabase;
let proxy: FaultProxy;
const services: RunningService[] = [];

beforeAll(async () => {
  testDb = await createTestDatabase();
  proxy = await startFaultProxy(testDb.url);
});

afterAll(async () => {
  for (const s of services) await s.stop();
  await proxy?.close();
  await testDb?.drop();
});

describe("startGrpcService", () => {
  it("waits for a database that is recovering, not ready meanwhile, and serves once it takes connections", async () => {
    const port = await freePort();
    const config = grpcServiceConfig(0, 0).parse({
      DATABASE_URL: proxy.url,
      EVENTS_PREFIX: `t_${randomBytes(4).toString("hex")}`,
      GRPC_PORT: port,
      METRICS_PORT: 0,
      LOG_LEVEL: "silent",
    });
    const health = createServiceClient(Health, `http://127.0.0.1:${port}`, { identity: null });
    proxy.setMode("recovering");

    const started = startGrpcService({
      name: "start-test",
      schema: "alpha",
      migrationsFolder,
      serviceNames: [],
      config,
      setup: () => ({ routes: () => {} }),
    });
    await proxy.turnedAway(2);
    expect((await health.check({ service: "" })).status).toBe(Status.NOT_SERVING);
    proxy.setMode("pass");
    const service = await started;
    services.push(service);

    expect(service.port).toBe(port);
    expect((await health.check({ service: "" })).status).toBe(Status.SERVING);
  });
});
