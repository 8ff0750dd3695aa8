import { Code, ConnectError } from "@connectrpc/connect";
import { failure } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ErrorBody } from "./errors.ts";
import {
  anOperation,
  aShopWithKey,
  type EdgeTestDatabase,
  edgeTestDatabase,
  merchant,
  testApp,
} from "./testing.ts";

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const aPayment = {
  merchant_operation_id: "order-1",
  client_id: "user-1",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
};

/** An app whose operations service answers every create with the given error, and a key. */
async function appFailingWith(err: unknown) {
  const app = testApp(database, {
    fakes: {
      operations: {
        createOperation: async () => {
          throw err;
        },
      },
    },
  });
  const { apiKey } = await aShopWithKey(app);
  return { app, apiKey };
}

const isOneErrorBody = (body: unknown) =>
  expect(body).toEqual({
    error: expect.objectContaining({ code: expect.any(String), message: expect.any(String) }),
    request_id: expect.any(String),
  });

describe("bad input", () => {
  it("answers malformed JSON with 400 invalid_json", async () => {
    const app = testApp(database);
    const { apiKey } = await aShopWithKey(app);
    const res = await app.request("/v1/payment", {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: '{"merchant_operation_id": ',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as ErrorBody;
    isOneErrorBody(body);
    expect(body.error.code).toBe("invalid_json");
  });

  it("answers a JSON array body with 400 invalid_json", async () => {
    const app = testApp(database);
    const { apiKey } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "POST", "/v1/payment", [aPayment]);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "invalid_json" });
  });

  it("answers a body that is not JSON with 415", async () => {
    const app = testApp(database);
    const { apiKey } = await aShopWithKey(app);
    const res = await app.request("/v1/payment", {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "text/plain" },
      body: JSON.stringify(aPayment),
    });
    expect(res.status).toBe(415);
    isOneErrorBody(await res.json());
  });

  it("answers a body over 64 KiB with 413 in the one shape, before parsing it", async () => {
    const app = testApp(database);
    const { apiKey } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "POST", "/v1/payment", {
      ...aPayment,
      name: "x".repeat(70 * 1024),
    });
    expect(res.status).toBe(413);
    isOneErrorBody(res.body);
    expect(res.body.error).toMatchObject({ code: "payload_too_large" });
  });

  it("answers an oversized admin body with 413 too", async () => {
    const app = testApp(database);
    const res = await app.request("/admin/v1/merchants", {
      method: "POST",
      headers: {
        authorization: "Bearer test-admin-token-0123456789abcdef0123456789",
        "content-type": "application/json",
      },
      body: JSON.stringify({ name: "x".repeat(100 * 1024) }),
    });
    expect(res.status).toBe(413);
  });

  it.each([
    ["merchant_operation_id", { merchant_operation_id: undefined }, /merchant_operation_id is required/],
    ["merchant_operation_id", { merchant_operation_id: "" }, /must not be empty/],
    ["client_id", { client_id: undefined }, /client_id is required/],
    ["client_id", { client_id: 42 }, /client_id must be a string/],
    ["client_ip", { client_ip: "300.1.1.1" }, /client_ip/],
    ["method", { method: "WT_EUR_SEPA" }, /method must be one of/],
    ["amount", { amount: 1000 }, /amount must be/],
    ["amount", { amount: "1000" }, /two decimal places/],
    ["amount", { amount: "1000.001" }, /two decimal places/],
    ["amount", { amount: "0.00" }, /greater than 0/],
    ["amount", { amount: "-5.00" }, /amount/],
    ["currency", { currency: "EUR" }, /currency must be one of/],
    ["method", { currency: "USDT" }, /does not belong to currency USDT/],
  ])("refuses a create with a bad %s (%j) with 400 naming the field", async (field, change, message) => {
    const app = testApp(database, {
      fakes: { operations: { createOperation: async () => ({ operation: anOperation() }) } },
    });
    const { apiKey } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "POST", "/v1/payment", { ...aPayment, ...change });
    expect(res.status).toBe(400);
    isOneErrorBody(res.body);
    expect(res.body.error).toMatchObject({ code: "validation_failed", field });
    expect((res.body as unknown as ErrorBody).error.message).toMatch(message);
  });

  it("refuses an empty body by naming the first required field", async () => {
    const app = testApp(database);
    const { apiKey } = await aShopWithKey(app);
    const res = await app.request("/v1/payment", { method: "POST", headers: { "x-api-key": apiKey } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as ErrorBody).error).toMatchObject({ field: "merchant_operation_id" });
  });

  it("accepts an IPv6 client_ip and ignores unknown fields", async () => {
    const app = testApp(database, {
      fakes: { operations: { createOperation: async () => ({ operation: anOperation() }) } },
    });
    const { apiKey } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "POST", "/v1/payment", {
      ...aPayment,
      client_ip: "2001:db8::1",
      extra: 1,
    });
    expect(res.status).toBe(200);
  });

  it("refuses admin input with wrong types with 400 naming the field", async () => {
    const app = testApp(database);
    const res = await app.request("/admin/v1/merchants", {
      method: "POST",
      headers: {
        authorization: "Bearer test-admin-token-0123456789abcdef0123456789",
        "content-type": "application/json",
      },
      body: JSON.stringify({ name: 7 }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as ErrorBody;
    isOneErrorBody(body);
    expect(body.error).toMatchObject({ code: "validation_failed", field: "name" });
  });

  it("answers an unknown route with 404 in the one shape", async () => {
    const app = testApp(database);
    const res = await app.request("/nowhere");
    expect(res.status).toBe(404);
    const body = (await res.json()) as ErrorBody;
    isOneErrorBody(body);
    expect(body.error.code).toBe("not_found");
  });

  it("answers a wrong method with 405, an Allow header and the one shape", async () => {
    const app = testApp(database);
    const { apiKey } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "GET", "/v1/payment");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toContain("POST");
    isOneErrorBody(res.body);
    expect(res.body.error).toMatchObject({ code: "method_not_allowed" });
  });
});

describe("mapping of downstream errors", () => {
  it.each([
    [Code.InvalidArgument, "validation_failed", 400],
    [Code.Unauthenticated, "bad_signature", 401],
    [Code.PermissionDenied, "not_found", 403],
    [Code.NotFound, "operation_not_found", 404],
    [Code.FailedPrecondition, "idempotency_conflict", 412],
    [Code.ResourceExhausted, "internal", 429],
    [Code.Internal, "ledger_inconsistent", 500],
    [Code.Unavailable, "no_provider_accepted", 503],
    [Code.DeadlineExceeded, "dependency_unavailable", 503],
  ] as const)(
    "maps Connect code %s with public code %s to HTTP %s, passing code, message and field",
    async (code, publicCode, status) => {
      const { app, apiKey } = await appFailingWith(
        failure(code, publicCode, "a message for the merchant", "amount"),
      );
      const res = await merchant(app, apiKey, "POST", "/v1/payment", aPayment);
      expect(res.status).toBe(status);
      expect(res.body).toEqual({
        error: { code: publicCode, message: "a message for the merchant", field: "amount" },
        request_id: expect.any(String),
      });
      // Every "come back later" says when; no other status carries the header.
      expect(res.headers.get("retry-after")).toBe(status === 429 || status === 503 ? "1" : null);
    },
  );

  it("answers an Unavailable without ErrorInfo (a transport error) with 503 and no cause", async () => {
    const { app, apiKey } = await appFailingWith(
      new ConnectError("connect ECONNREFUSED 10.0.0.7:50051", Code.Unavailable),
    );
    const res = await merchant(app, apiKey, "POST", "/v1/payment", aPayment);
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: "dependency_unavailable" });
    expect(JSON.stringify(res.body)).not.toContain("ECONNREFUSED");
  });

  it.each([
    [Code.PermissionDenied, "edge may not call gateway.operations.v1.OperationsService/CreateOperation"],
    [Code.Unauthenticated, "service token signature does not match"],
  ])(
    "answers a refused service token (%s without ErrorInfo) with 500 internal, never 401/403 nor its text",
    async (code, text) => {
      const { app, apiKey } = await appFailingWith(new ConnectError(text, code));
      const res = await merchant(app, apiKey, "POST", "/v1/payment", aPayment);
      expect(res.status).toBe(500);
      expect(res.body.error).toEqual({ code: "internal", message: "internal error" });
      expect(JSON.stringify(res.body)).not.toContain("service");
    },
  );

  it("answers an unexpected downstream crash with 500 internal and never sends its message", async () => {
    const { app, apiKey } = await appFailingWith(new Error("secret stack detail"));
    const res = await merchant(app, apiKey, "POST", "/v1/payment", aPayment);
    expect(res.status).toBe(500);
    expect(res.body.error).toMatchObject({ code: "internal", message: "internal error" });
    expect(JSON.stringify(res.body)).not.toContain("secret stack detail");
  });

  it("omits field when the error names none", async () => {
    const { app, apiKey } = await appFailingWith(
      failure(Code.FailedPrecondition, "route_not_configured", "no route"),
    );
    const res = await merchant(app, apiKey, "POST", "/v1/payment", aPayment);
    expect(res.status).toBe(412);
    expect(res.body.error).toEqual({ code: "route_not_configured", message: "no route" });
  });
});
