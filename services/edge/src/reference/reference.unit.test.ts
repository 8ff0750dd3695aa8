import { connect } from "@gw/db";
import { createLogger } from "@gw/log";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import type { EdgeClients } from "../deps.ts";
import { OPERATION_DOCS } from "./operations.ts";

// The document /docs renders, as GET /openapi.json serves it: built in memory (no request
// below reads the database or a service).
type Op = {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  requestBody?: { content: Record<string, { example?: unknown }> };
  responses: Record<string, { content?: Record<string, { example?: unknown }> }>;
};
type Doc = {
  servers?: { url: string }[];
  tags?: { name: string }[];
  "x-tagGroups"?: { name: string; tags: string[] }[];
  paths: Record<string, Record<string, Op>>;
  webhooks: Record<string, { post: Op & { requestBody: { content: Record<string, { schema: unknown }> } } }>;
  components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
  info: { license?: { identifier?: string } };
};

let doc: Doc;
const { sql, db } = connect("postgres://127.0.0.1:1/unused", { max: 1, application: "reference-test" });
beforeAll(async () => {
  const app = buildApp({
    db,
    clients: {} as EdgeClients,
    logger: createLogger("reference-test", "silent"),
    adminToken: "x".repeat(32),
    payUrl: "http://127.0.0.1:8081",
    probes: { self: {}, downstream: {} },
  });
  doc = (await (await app.request("/openapi.json")).json()) as Doc;
});
afterAll(() => sql.end());

const operations = () =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, path, op })),
  );

describe("the API reference's document", () => {
  it("gives every operation a unique operationId, a summary and a description, from the table beside the routes", () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(40);
    const missing = ops.filter(({ key }) => !OPERATION_DOCS[key]).map(({ key }) => key);
    expect(missing, "operations without an entry in reference/operations.ts").toEqual([]);
    const stale = Object.keys(OPERATION_DOCS).filter((key) => !ops.some((o) => o.key === key));
    expect(stale, "entries of reference/operations.ts for no operation").toEqual([]);
    for (const { key, op } of ops) {
      expect(op.operationId, key).toMatch(/^[A-Za-z][A-Za-z0-9_]*$/);
      expect(op.summary, key).toBeTruthy();
      expect(op.description, key).toBeTruthy();
    }
    const ids = ops.map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("has an example for every request body and every JSON answer", () => {
    for (const { key, op } of operations()) {
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
        expect(media.example, `${key} request ${type}`).toBeDefined();
      }
      for (const [status, response] of Object.entries(op.responses)) {
        const json = response.content?.["application/json"];
        if (json) expect(json.example, `${key} ${status}`).toBeDefined();
      }
    }
    const create = doc.paths["/v1/payment"]?.post;
    expect(create?.requestBody?.content["application/json"]?.example).toMatchObject({
      merchant_operation_id: "order-1001",
      amount: "1000.00",
    });
    expect(create?.responses["412"]?.content?.["application/json"]?.example).toMatchObject({
      error: { code: "idempotency_conflict" },
    });
  });

  it("marks the routes without credentials public (security: []) and keeps the key on the merchant API", () => {
    for (const { key, path, op } of operations()) {
      if (path.startsWith("/v1/")) expect(op.security, key).toEqual([{ ApiKey: [] }]);
      else if (path.startsWith("/admin/")) expect(op.security, key).toEqual([{ AdminBearer: [] }]);
      else expect(op.security, key).toEqual([]);
    }
  });

  it("puts the merchant API first: its paths, its tags and its group, the admin API in a group of its own", () => {
    expect(Object.keys(doc.paths)[0]).toMatch(/^\/v1\//);
    const firstAdmin = Object.keys(doc.paths).findIndex((p) => p.startsWith("/admin/"));
    const lastMerchant = Object.keys(doc.paths).findLastIndex((p) => p.startsWith("/v1/"));
    expect(lastMerchant).toBeLessThan(firstAdmin);
    expect(doc.tags?.[0]?.name).toBe("merchant API");
    expect(doc["x-tagGroups"]?.map((g) => g.name)).toEqual([
      "Merchant API",
      "Admin API",
      "Providers and probes",
    ]);
    const grouped = new Set(doc["x-tagGroups"]?.flatMap((g) => g.tags));
    for (const { key, op } of operations())
      for (const tag of op.tags ?? []) expect(grouped, key).toContain(tag);
    expect(doc.servers?.[0]?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(doc.info.license?.identifier).toBe("Apache-2.0");
  });

  it("describes every event the gateway delivers in the 3.1 webhooks section, with the operation as its data", () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual(
      [
        "payment.awaiting_confirmation",
        "payment.cancelled",
        "payment.completed",
        "payment.manual_check",
        "payment.rejected",
        "payout.completed",
        "payout.rejected",
      ].sort(),
    );
    const event = doc.components.schemas.WebhookEvent;
    expect(Object.keys(event?.properties ?? {})).toEqual(["id", "type", "created_at", "data"]);
    expect(event?.properties?.data).toEqual({ $ref: "#/components/schemas/OperationState" });
    for (const [type, { post }] of Object.entries(doc.webhooks)) {
      const body = post.requestBody.content["application/json"] as {
        example?: { type?: string; data?: { status?: string } };
      };
      expect(body.example?.type).toBe(type);
      expect(body.example?.data?.status).toBe(type.split(".")[1]);
      expect(post.operationId).toBeTruthy();
    }
  });
});
