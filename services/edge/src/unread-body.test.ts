import { randomBytes } from "node:crypto";
import { Client } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningEdge, startEdge } from "./app.ts";
import { configSchema } from "./config.ts";
import { ADMIN_TOKEN, type EdgeTestDatabase, edgeTestDatabase, fakeClients } from "./testing.ts";

let database: EdgeTestDatabase;
let edge: RunningEdge;
beforeAll(async () => {
  database = await edgeTestDatabase();
  const config = configSchema.parse({
    DATABASE_URL: database.testDb.url,
    EVENTS_PREFIX: `t_${randomBytes(4).toString("hex")}`,
    PORT: "0",
    METRICS_PORT: "0",
    ADMIN_TOKEN,
    LOG_LEVEL: "silent",
  });
  edge = await startEdge(config, { clients: fakeClients({}) });
});
afterAll(async () => {
  await edge?.stop();
  await database?.close();
});

const json = (bytes: number) => JSON.stringify({ name: "x".repeat(bytes) });

describe("an answer given before the request body was read", () => {
  it.each([
    [
      "413 for a body over the admin limit",
      "/admin/v1/merchants",
      { authorization: `Bearer ${ADMIN_TOKEN}` },
      2 * 1024 * 1024,
      413,
      "close",
    ],
    [
      "413 for a body over the limit, before the key is checked",
      "/v1/payment",
      {},
      2 * 1024 * 1024,
      413,
      "close",
    ],
    // Within the limit, the body is read and discarded before the 401: the connection stays.
    ["401 for a request without an API key", "/v1/payment", {}, 32 * 1024, 401, "keep-alive"],
  ])(
    "answers a %s, and a keep-alive client's next request on the connection succeeds",
    async (_, path, headers, bytes, status, connection) => {
      // One connection, reused while the server keeps it open: undici's default fetch behaves the same way.
      const client = new Client(`http://127.0.0.1:${edge.port}`, { pipelining: 1 });
      try {
        const refused = await client.request({
          method: "POST",
          path,
          headers: { ...headers, "content-type": "application/json" },
          body: json(bytes),
        });
        await refused.body.text();
        expect(refused.statusCode).toBe(status);
        expect(refused.headers.connection).toBe(connection);
        const next = await client.request({ method: "GET", path: "/livez" });
        await next.body.dump();
        expect(next.statusCode).toBe(204);
      } finally {
        await client.close();
      }
    },
  );
});
