import { randomBytes } from "node:crypto";
import { type AddressInfo, createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEdge } from "./app.ts";
import { configSchema } from "./config.ts";
import type { ErrorBody } from "./errors.ts";
import {
  ADMIN_TOKEN,
  admin,
  anOperation,
  aShopWithKey,
  type EdgeTestDatabase,
  edgeTestDatabase,
  fakeClients,
  memoryLogger,
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

describe("health probes", () => {
  it("answers /livez with 204 and no body, without a key", async () => {
    const res = await testApp(database).request("/livez");
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
  });

  it("answers /healthz with 204 while its own dependencies answer, and 503 naming the one that does not", async () => {
    const up = await testApp(database).request("/healthz");
    expect(up.status).toBe(204);
    const down = testApp(database, { self: { postgres: async () => true, nats: async () => false } });
    const res = await down.request("/healthz");
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: { code: "unhealthy", message: "unavailable: nats" } });
  });

  it("answers /readyz with 503 when a downstream service is down, while /healthz stays 204", async () => {
    const app = testApp(database, {
      downstream: {
        ledger: async () => true,
        operations: async () => {
          throw new Error("connection refused");
        },
      },
    });
    expect((await app.request("/healthz")).status).toBe(204);
    const res = await app.request("/readyz");
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: { message: "unavailable: operations" } });
  });

  it("counts a probe that hangs as down", async () => {
    const app = testApp(database, { downstream: { matching: () => new Promise<boolean>(() => {}) } });
    expect((await app.request("/readyz")).status).toBe(503);
  });
});

describe("OpenAPI", () => {
  it("serves an OpenAPI 3.1 document describing the merchant and admin routes", async () => {
    const res = await testApp(database).request("/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toBe("3.1.0");
    for (const path of [
      "/v1/payment",
      "/v1/payout",
      "/v1/payment/link",
      "/v1/get_operation_state",
      "/v1/cancel_operation",
      "/v1/balances",
      "/admin/v1/merchants",
      "/admin/v1/shops/{shop_id}/api-keys",
      "/admin/v1/providers/{name}",
      "/admin/v1/fx/rates/{from}/{to}",
    ]) {
      expect(doc.paths, path).toHaveProperty([path]);
    }
    expect(JSON.stringify(doc.paths["/v1/payment"])).toContain("merchant_operation_id");
  });

  it("serves the Scalar reference with its script from the edge itself, nothing from another origin", async () => {
    const app = testApp(database);
    const res = await app.request("/docs");
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('"url": "/openapi.json"');
    expect([...html.matchAll(/<script[^>]+src="([^"]+)"/g)].map((m) => m[1])).toEqual(["/docs/scalar.js"]);
    expect(html).not.toMatch(/https?:\/\//);
    const script = await app.request("/docs/scalar.js");
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toContain("javascript");
    expect((await script.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  });
});

describe("logs", () => {
  it("logs request id, shop, method, path, status and duration, and never the key or secrets", async () => {
    const { logger, lines } = memoryLogger();
    const app = testApp(database, {
      logger,
      fakes: {
        operations: { createOperation: async () => ({ operation: anOperation() }) },
        webhooks: { putEndpoint: async () => ({ secret: "whsec_do_not_log_me" }) },
      },
    });
    const { apiKey, shopId } = await aShopWithKey(app);
    const res = await merchant(app, apiKey, "POST", "/v1/payment", {
      merchant_operation_id: "order-1",
      client_id: "user-1",
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
    });
    await admin(app, "PUT", `/admin/v1/shops/${shopId}/settings`, { webhook_url: "https://m.test/h" });
    await merchant(app, `${apiKey.slice(0, -1)}x`, "GET", "/v1/balances");

    const all = lines.join("");
    expect(all).not.toContain(apiKey);
    expect(all).not.toContain(apiKey.slice(12));
    expect(all).not.toContain("whsec_do_not_log_me");
    expect(all).not.toContain(ADMIN_TOKEN);
    const line = lines.map((l) => JSON.parse(l)).find((l) => l.path === "/v1/payment");
    expect(line).toMatchObject({
      request_id: res.headers.get("x-request-id"),
      shop_id: shopId,
      method: "POST",
      status: 200,
      duration_ms: expect.any(Number),
    });
  });
});

/**
 * A port of this test's own where every connection is closed at once: a downstream
 * service that is down. The default ports may be served by a stack running beside the
 * tests (`./gw up`), so the test must not rely on nothing answering there.
 */
async function deadService(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

describe("startEdge", () => {
  it("listens, migrates, serves probes and metrics on its own port, and stops", async () => {
    const down = await deadService();
    const config = configSchema.parse({
      DATABASE_URL: database.testDb.url,
      EVENTS_PREFIX: `t_${randomBytes(4).toString("hex")}`,
      PORT: "0",
      METRICS_PORT: "0",
      ADMIN_TOKEN,
      LOG_LEVEL: "silent",
      OPERATIONS_URL: down.url,
      MATCHING_URL: down.url,
      LEDGER_URL: down.url,
      RECEIPTS_URL: down.url,
      WEBHOOKS_URL: down.url,
    });
    const edge = await startEdge(config, { clients: fakeClients({}) });
    try {
      const base = `http://127.0.0.1:${edge.port}`;
      expect((await fetch(`${base}/livez`)).status).toBe(204);
      expect((await fetch(`${base}/healthz`)).status).toBe(204);
      // The downstream services' ports answer nothing, so the edge is alive and healthy but not ready.
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      /** An admin create with `body`: a string is sent with its length declared, a stream chunked. */
      const post = (body: string | ReadableStream, contentType = "application/json") =>
        fetch(`${base}/admin/v1/merchants`, {
          method: "POST",
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": contentType },
          body,
          duplex: "half",
        } as RequestInit);
      const chunks = (text: string) =>
        new ReadableStream({
          start(controller) {
            for (let i = 0; i < text.length; i += 8192)
              controller.enqueue(Buffer.from(text.slice(i, i + 8192)));
            controller.close();
          },
        });
      const answer = async (res: Response) => ({
        status: res.status,
        code: ((await res.json()) as ErrorBody).error.code,
      });
      const oversized = JSON.stringify({ name: "x".repeat(65 * 1024) });
      // With a declared length the body is checked as declared and read straight from the
      // socket; sent chunked it is bounded as it streams, and read whole.
      expect(await answer(await post(oversized))).toEqual({ status: 413, code: "payload_too_large" });
      expect(await answer(await post(chunks(oversized)))).toEqual({ status: 413, code: "payload_too_large" });
      const broken = `{"name": "${"x".repeat(20_000)}`;
      expect(await answer(await post(broken))).toEqual({ status: 400, code: "invalid_json" });
      expect(await answer(await post(chunks(broken)))).toEqual({ status: 400, code: "invalid_json" });
      expect(await answer(await post('{"name": "a"}', "text/plain"))).toEqual({
        status: 415,
        code: "unsupported_media_type",
      });
      const metrics = await (await fetch(`http://127.0.0.1:${edge.metricsPort}/metrics`)).text();
      expect(metrics).toContain("http_server_duration_seconds");
    } finally {
      await edge.stop();
      await down.close();
    }
  });

  it("refuses an admin token shorter than 32 characters", () => {
    expect(configSchema.safeParse({ ADMIN_TOKEN: "short" }).success).toBe(false);
    expect(configSchema.safeParse({}).success).toBe(false);
  });
});
