import { randomBytes } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Client, Interceptor, ServiceImpl } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { EventHealthService } from "@gw/proto/gateway/events/v1/event_health_pb";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import {
  GetPoolDepthRequestSchema,
  GetPoolDepthResponseSchema,
  MatchingService,
} from "@gw/proto/gateway/matching/v1/matching_pb";
import { OperationsService } from "@gw/proto/gateway/operations/v1/operations_pb";
import { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { WebhooksService } from "@gw/proto/gateway/webhooks/v1/webhooks_pb";
import { Health, HealthCheckResponse_ServingStatus } from "@gw/proto/grpc/health/v1/health_pb";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { AccessPolicy } from "./access-policy.ts";
import { GATEWAY_ACCESS_POLICY, isAllowed } from "./access-policy.ts";
import { createServiceClient } from "./client.ts";
import { Code, ConnectError } from "./errors.ts";
import { runAsService, type ServiceIdentity } from "./internal-auth.ts";
import { type GrpcServer, startGrpcServer } from "./server.ts";
import { parseServiceTokenKeys, signServiceToken, verifyServiceToken } from "./service-token.ts";

// Internal access on a real server (port 0): every call but health needs a service
// token of the deployment's key set, and the policy decides which caller may call what.

const secret = () => randomBytes(32).toString("base64url");
const OLD = `old:${secret()}`;
const NEW = `new:${secret()}`;
/** The server is mid-rotation: it signs with the new key and still accepts the old one. */
const serverKeys = parseServiceTokenKeys(`${NEW},${OLD}`);
const POLICY: AccessPolicy = {
  [MatchingService.typeName]: { GetPoolDepth: ["operations"], "*": ["edge"] },
};

const matching: Partial<ServiceImpl<typeof MatchingService>> = {
  async getPoolDepth() {
    return { payouts: 7n, freeAmount: "100.00" };
  },
  async getPoolPayout() {
    return {};
  },
};

let server: GrpcServer;
let url: string;
const as = (name: string, keys = serverKeys): ServiceIdentity => ({ name, keys });
const client = (identity: ServiceIdentity | null): Client<typeof MatchingService> =>
  createServiceClient(MatchingService, url, { identity });

async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

beforeAll(async () => {
  server = await startGrpcServer({
    routes: (router) => router.service(MatchingService, matching),
    serviceNames: [MatchingService.typeName],
    port: 0,
    host: "127.0.0.1",
    check: async () => true,
    auth: { keys: serverKeys, policy: POLICY },
  });
  url = `http://127.0.0.1:${server.port}`;
});

afterAll(async () => {
  await server?.close();
});

describe("internal access to a gRPC service", () => {
  it("serves a caller the policy allows for the method", async () => {
    const res = await client(as("operations")).getPoolDepth({ method: "WT_RUB_C2C", currency: "RUB" });
    expect(res.payouts).toBe(7n);
  });

  it("refuses a call without a token as UNAUTHENTICATED", async () => {
    expect(await codeOf(client(null).getPoolDepth({}))).toBe(Code.Unauthenticated);
  });

  it("refuses a caller the policy does not name for the method as PERMISSION_DENIED", async () => {
    expect(await codeOf(client(as("edge")).getPoolDepth({}))).toBe(Code.PermissionDenied);
    expect(await codeOf(client(as("checkout")).getPoolPayout({}))).toBe(Code.PermissionDenied);
  });

  it("lets the service's catch-all rule cover its other methods", async () => {
    expect(await codeOf(client(as("edge")).getPoolPayout({}))).toBe("ok");
    expect(await codeOf(client(as("operations")).getPoolPayout({}))).toBe(Code.PermissionDenied);
  });

  it("refuses a token signed with a key outside the set", async () => {
    const stranger = parseServiceTokenKeys(`new:${secret()}`);
    expect(await codeOf(client(as("operations", stranger)).getPoolDepth({}))).toBe(Code.Unauthenticated);
  });

  it("accepts tokens of the old key during a rotation", async () => {
    const oldOnly = parseServiceTokenKeys(OLD);
    expect(await codeOf(client(as("operations", oldOnly)).getPoolDepth({}))).toBe("ok");
  });

  it("refuses a token made for another service", async () => {
    const token = signServiceToken(serverKeys, {
      caller: "operations",
      audience: "gateway.ledger.v1.LedgerService",
    });
    const call = client(null).getPoolDepth({}, { headers: { authorization: `Bearer ${token}` } });
    const err = await call.then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.Unauthenticated);
    expect(err?.rawMessage).toBe("service token is for another service");
  });

  it("refuses an expired token", async () => {
    const token = signServiceToken(
      serverKeys,
      { caller: "operations", audience: MatchingService.typeName },
      Date.now() - 10 * 60_000,
    );
    const call = client(null).getPoolDepth({}, { headers: { authorization: `Bearer ${token}` } });
    expect(await codeOf(call)).toBe(Code.Unauthenticated);
  });

  it("refuses a token whose payload was changed after signing", async () => {
    const token = signServiceToken(serverKeys, { caller: "edge", audience: MatchingService.typeName });
    const [v, kid, , sig] = token.split(".");
    const forged = Buffer.from(
      JSON.stringify({ iss: "operations", aud: MatchingService.typeName, exp: 9_999_999_999 }),
    ).toString("base64url");
    const call = client(null).getPoolDepth(
      {},
      { headers: { authorization: `Bearer ${v}.${kid}.${forged}.${sig}` } },
    );
    expect(await codeOf(call)).toBe(Code.Unauthenticated);
  });

  it("keeps health checks open to callers without a token", async () => {
    const health = createServiceClient(Health, url, { identity: null });
    const res = await health.check({ service: "" });
    expect(res.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("calls as the service being set up when no identity is given", async () => {
    const scoped = runAsService(as("operations"), () => createServiceClient(MatchingService, url));
    expect(await codeOf(scoped.getPoolDepth({}))).toBe("ok");
  });
});

describe("the token caches", () => {
  it("signs one token per target service on the client and reuses it", async () => {
    const seen: string[] = [];
    const spy: Interceptor = (next) => (req) => {
      seen.push(req.header.get("authorization") ?? "");
      return next(req);
    };
    const options = { identity: as("operations"), interceptors: [spy] };
    const matchingClient = createServiceClient(MatchingService, url, options);
    await matchingClient.getPoolDepth({});
    await matchingClient.getPoolDepth({});
    await createServiceClient(Health, url, options).check({ service: "" });
    expect(seen[0]).toMatch(/^Bearer gw1\./);
    expect(seen[1]).toBe(seen[0]);
    const audience = (header: string | undefined) => {
      const verdict = verifyServiceToken(
        serverKeys,
        (header ?? "").slice(7),
        new Set([MatchingService.typeName, Health.typeName]),
      );
      return verdict.ok ? verdict.claims.aud : verdict.reason;
    };
    expect(audience(seen[0])).toBe(MatchingService.typeName);
    expect(audience(seen[2])).toBe(Health.typeName);
  });

  it("still applies the policy per method to a token the server has verified before", async () => {
    const token = signServiceToken(serverKeys, { caller: "operations", audience: MatchingService.typeName });
    const headers = { authorization: `Bearer ${token}` };
    expect(await codeOf(client(null).getPoolDepth({}, { headers }))).toBe("ok");
    expect(await codeOf(client(null).getPoolPayout({}, { headers }))).toBe(Code.PermissionDenied);
    expect(await codeOf(client(null).getPoolDepth({}, { headers }))).toBe("ok");
  });

  it("refuses a token the server has verified before once it expired", async () => {
    const token = signServiceToken(serverKeys, { caller: "operations", audience: MatchingService.typeName });
    const headers = { authorization: `Bearer ${token}` };
    expect(await codeOf(client(null).getPoolDepth({}, { headers }))).toBe("ok");
    // Only Date is faked: the server's clock moves past the token's end (TTL and the
    // forgiven skew), while sockets and timers run as usual.
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 6 * 60_000);
      const err = await client(null)
        .getPoolDepth({}, { headers })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(err?.code).toBe(Code.Unauthenticated);
      expect(err?.rawMessage).toBe("service token expired");
    } finally {
      vi.useRealTimers();
    }
  });
});

/** A grpc-js stub of MatchingService/GetPoolDepth, as another language's generated client would be. */
interface MatchingStub extends grpc.Client {
  getPoolDepth(
    req: { method: string; currency: string },
    metadata: grpc.Metadata,
    callback: (err: grpc.ServiceError | null, res?: { payouts: bigint }) => void,
  ): grpc.ClientUnaryCall;
}

describe("internal access for a stock grpc-js client", () => {
  let stub: MatchingStub;

  beforeAll(() => {
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
    stub = new Matching(
      `127.0.0.1:${server.port}`,
      grpc.credentials.createInsecure(),
    ) as unknown as MatchingStub;
  });

  afterAll(() => stub?.close());

  const call = (metadata: grpc.Metadata) =>
    new Promise<{ code: number; payouts?: bigint }>((resolve) =>
      stub.getPoolDepth({ method: "WT_RUB_C2C", currency: "RUB" }, metadata, (err, res) =>
        resolve(err ? { code: err.code } : { code: grpc.status.OK, payouts: res?.payouts }),
      ),
    );

  it("is refused UNAUTHENTICATED without a token", async () => {
    expect((await call(new grpc.Metadata())).code).toBe(grpc.status.UNAUTHENTICATED);
  });

  it("is served with a token in the authorization metadata", async () => {
    const metadata = new grpc.Metadata();
    const token = signServiceToken(serverKeys, { caller: "operations", audience: MatchingService.typeName });
    metadata.set("authorization", `Bearer ${token}`);
    expect(await call(metadata)).toEqual({ code: grpc.status.OK, payouts: 7n });
  });

  it("is refused PERMISSION_DENIED with a token of a caller the policy does not allow", async () => {
    const metadata = new grpc.Metadata();
    metadata.set(
      "authorization",
      `Bearer ${signServiceToken(serverKeys, { caller: "webhooks", audience: MatchingService.typeName })}`,
    );
    expect((await call(metadata)).code).toBe(grpc.status.PERMISSION_DENIED);
  });
});

describe("service tokens and the gateway's policy", () => {
  it("refuses key sets with short, repeated or malformed keys, naming no secret", () => {
    const short = randomBytes(16).toString("base64url");
    expect(() => parseServiceTokenKeys(`a:${short}`)).toThrow("at least 32 bytes");
    expect(() => parseServiceTokenKeys(`a:${secret()},a:${secret()}`)).toThrow("appears twice");
    expect(() => parseServiceTokenKeys("no-colon")).toThrow("<id>:<base64url secret>");
    expect(() => parseServiceTokenKeys("")).toThrow("no key given");
    try {
      parseServiceTokenKeys(`a:${short}`);
    } catch (err) {
      expect(String(err)).not.toContain(short);
    }
  });

  it("verifies a token it signed and reports what it says", () => {
    const token = signServiceToken(serverKeys, { caller: "edge", audience: "svc" }, 1_000_000);
    const verdict = verifyServiceToken(serverKeys, token, new Set(["svc"]), 1_000_000);
    expect(verdict).toEqual({ ok: true, claims: { iss: "edge", aud: "svc", exp: 1_000 + 300 } });
  });

  it("has a rule for every RPC of every gateway service, so a new RPC is never refused by surprise", () => {
    for (const service of [
      OperationsService,
      LedgerService,
      MatchingService,
      ReceiptsService,
      WebhooksService,
      EventHealthService,
    ]) {
      const rules = GATEWAY_ACCESS_POLICY[service.typeName];
      expect(rules, service.typeName).toBeDefined();
      for (const method of service.methods) {
        const callers = rules?.[method.name] ?? rules?.["*"];
        expect(
          callers?.length,
          `${service.typeName}/${method.name} has no line in access-policy.ts`,
        ).toBeGreaterThan(0);
      }
    }
  });

  it("lets only the edge call admin RPCs and only operations quote", () => {
    const ops = "gateway.operations.v1.OperationsService";
    expect(isAllowed(GATEWAY_ACCESS_POLICY, ops, "CreateOperation", "checkout")).toBe(true);
    expect(isAllowed(GATEWAY_ACCESS_POLICY, ops, "PutProvider", "edge")).toBe(true);
    expect(isAllowed(GATEWAY_ACCESS_POLICY, ops, "PutProvider", "checkout")).toBe(false);
    expect(isAllowed(GATEWAY_ACCESS_POLICY, ops, "CreateOperation", "webhooks")).toBe(false);
    expect(isAllowed(GATEWAY_ACCESS_POLICY, "gateway.ledger.v1.LedgerService", "Quote", "operations")).toBe(
      true,
    );
    expect(isAllowed(GATEWAY_ACCESS_POLICY, "gateway.ledger.v1.LedgerService", "Quote", "edge")).toBe(false);
    expect(isAllowed(GATEWAY_ACCESS_POLICY, "gateway.unknown.v1.Nope", "Any", "edge")).toBe(false);
  });
});
