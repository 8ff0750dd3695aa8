import { Health, HealthCheckResponse_ServingStatus } from "@gw/proto/grpc/health/v1/health_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServiceClient } from "./client.ts";
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

  it("answers many concurrent calls over its one session", async () => {
    const client = createServiceClient(Health, baseUrl);
    const answers = await Promise.all(Array.from({ length: 32 }, () => client.check({ service: "" })));
    expect(answers.every((a) => a.status === HealthCheckResponse_ServingStatus.SERVING)).toBe(true);
  });
});
