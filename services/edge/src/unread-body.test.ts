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

const TWO_MIB = JSON.stringify({ name: "x".repeat(2 * 1024 * 1024) });

describe("an answer given without reading the request body", () => {
  it.each([
    ["413 for a body over the limit", "/admin/v1/merchants", { authorization: `Bearer ${ADMIN_TOKEN}` }, 413],
    ["401 for a request without an API key", "/v1/payment", {}, 401],
  ])(
    "closes the connection after a %s, so a keep-alive client's next request succeeds",
    async (_, path, headers, status) => {
      // One connection, reused while the server keeps it open: undici's default fetch behaves the same way.
      const client = new Client(`http://127.0.0.1:${edge.port}`, { pipelining: 1 });
      try {
        const refused = await client.request({
          method: "POST",
          path,
          headers: { ...headers, "content-type": "application/json" },
          body: TWO_MIB,
        });
        await refused.body.text();
        expect(refused.statusCode).toBe(status);
        expect(refused.headers.connection).toBe("close");
        const next = await client.request({ method: "GET", path: "/livez" });
        await next.body.dump();
        expect(next.statusCode).toBe(204);
      } finally {
        await client.close();
      }
    },
  );
});
