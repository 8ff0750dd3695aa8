import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import {
  GetPoolDepthRequestSchema,
  GetPoolDepthResponseSchema,
  MatchingService,
} from "@gw/proto/gateway/matching/v1/matching_pb";
import { service as healthDefinition } from "grpc-health-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServiceClient } from "./client.ts";
import { Code, ConnectError, errorInfo, failure } from "./errors.ts";
import { type GrpcServer, startGrpcServer } from "./server.ts";

// The internal hop is @grpc/grpc-js behind connect's interfaces. These tests hold our
// server to what a stock client sees: plain grpc-js stubs and the grpc-health-check
// definitions (what Kubernetes probes, grpcurl and other languages' stubs amount to).

/** A matching service whose only call fails the way a domain error does. */
const conflicting: Partial<ServiceImpl<typeof MatchingService>> = {
  async getPoolDepth() {
    throw failure(
      Code.FailedPrecondition,
      "idempotency_conflict",
      "the key was used with another body",
      "merchant_operation_id",
    );
  },
};

let server: GrpcServer;
let healthy = true;

interface HealthClient extends grpc.Client {
  check(
    req: { service: string },
    callback: (err: grpc.ServiceError | null, res?: { status: string }) => void,
  ): grpc.ClientUnaryCall;
}

/** What a grpc-js stub of MatchingService looks like. */
interface MatchingStub extends grpc.Client {
  getPoolDepth(
    req: { method: string; currency: string },
    callback: (err: grpc.ServiceError | null) => void,
  ): grpc.ClientUnaryCall;
}

let health: HealthClient;

function check(service: string): Promise<string | undefined> {
  return new Promise((resolve, reject) =>
    health.check({ service }, (err, res) => (err ? reject(err) : resolve(res?.status))),
  );
}

beforeAll(async () => {
  server = await startGrpcServer({
    routes: (router) => router.service(MatchingService, conflicting),
    serviceNames: [MatchingService.typeName],
    port: 0,
    host: "127.0.0.1",
    check: async () => healthy,
  });
  const Health = grpc.makeGenericClientConstructor(
    healthDefinition as unknown as grpc.ServiceDefinition,
    "Health",
  );
  health = new Health(
    `127.0.0.1:${server.port}`,
    grpc.credentials.createInsecure(),
  ) as unknown as HealthClient;
});

afterAll(async () => {
  health?.close();
  await server?.close();
});

describe("grpc.health.v1 through a stock grpc-js client", () => {
  it("answers SERVING for the whole process and for each registered service", async () => {
    healthy = true;
    expect(await check("")).toBe("SERVING");
    expect(await check(MatchingService.typeName)).toBe("SERVING");
  });

  it("answers SERVICE_UNKNOWN for a service the process does not serve", async () => {
    expect(await check("gateway.nothing.v1.NothingService")).toBe("SERVICE_UNKNOWN");
  });

  it("answers NOT_SERVING once the checker reports the dependencies down", async () => {
    healthy = false;
    try {
      expect(await check("")).toBe("NOT_SERVING");
      expect(await check(MatchingService.typeName)).toBe("NOT_SERVING");
    } finally {
      healthy = true;
    }
  });
});

describe("compressed requests", () => {
  it("are served for a grpc-js client that gzips its messages", async () => {
    const Health = grpc.makeGenericClientConstructor(
      healthDefinition as unknown as grpc.ServiceDefinition,
      "Health",
    );
    const gzipping = new Health(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure(), {
      "grpc.default_compression_algorithm": 2,
    }) as unknown as HealthClient;
    try {
      const status = await new Promise<string | undefined>((resolve, reject) =>
        gzipping.check({ service: "" }, (err, res) => (err ? reject(err) : resolve(res?.status))),
      );
      expect(status).toBe("SERVING");
    } finally {
      gzipping.close();
    }
  });
});

describe("domain errors", () => {
  it("reach a createServiceClient caller with the same code, public code and field", async () => {
    const client = createServiceClient(MatchingService, `http://127.0.0.1:${server.port}`);
    const err = await client.getPoolDepth({ method: "card", currency: "RUB" }).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((err as ConnectError).rawMessage).toBe("the key was used with another body");
    const info = errorInfo(err);
    expect({ code: info?.code, field: info?.field }).toEqual({
      code: "idempotency_conflict",
      field: "merchant_operation_id",
    });
  });

  it("reach a stock grpc-js caller as a plain gRPC status with the details trailer", async () => {
    const Matching = grpc.makeGenericClientConstructor(
      {
        getPoolDepth: {
          path: `/${MatchingService.typeName}/GetPoolDepth`,
          requestStream: false,
          responseStream: false,
          requestSerialize: (req: { method: string; currency: string }) =>
            Buffer.from(toBinary(GetPoolDepthRequestSchema, create(GetPoolDepthRequestSchema, req))),
          requestDeserialize: (b: Buffer) => fromBinary(GetPoolDepthRequestSchema, b),
          responseSerialize: () => Buffer.alloc(0),
          responseDeserialize: (b: Buffer) => fromBinary(GetPoolDepthResponseSchema, b),
        },
      },
      "MatchingService",
    );
    const client = new Matching(
      `127.0.0.1:${server.port}`,
      grpc.credentials.createInsecure(),
    ) as unknown as MatchingStub;
    try {
      const err = await new Promise<grpc.ServiceError>((resolve, reject) =>
        client.getPoolDepth({ method: "card", currency: "RUB" }, (e) =>
          e ? resolve(e) : reject(new Error("the call succeeded")),
        ),
      );
      expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
      expect(err.details).toBe("the key was used with another body");
      expect(err.metadata.get("grpc-status-details-bin")).toHaveLength(1);
    } finally {
      client.close();
    }
  });
});
