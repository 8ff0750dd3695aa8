import { createTestDatabase, type TestDatabase } from "@gw/db";
import { Client } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningSandbox, startSandbox } from "./app.ts";
import { configSchema } from "./config.ts";

let database: TestDatabase;
let sandbox: RunningSandbox;
beforeAll(async () => {
  database = await createTestDatabase();
  sandbox = await startSandbox(
    configSchema.parse({
      DATABASE_URL: database.url,
      HTTP_PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: "silent",
    }),
  );
});
afterAll(async () => {
  await sandbox?.stop();
  await database?.drop();
});

describe("the sandbox answering a request without reading its body", () => {
  it("closes the connection after refusing a 2 MiB body, so a keep-alive client's next request succeeds", async () => {
    const client = new Client(`http://127.0.0.1:${sandbox.port}`, { pipelining: 1 });
    try {
      const refused = await client.request({
        method: "POST",
        path: "/no-such-route",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ padding: "x".repeat(2 * 1024 * 1024) }),
      });
      await refused.body.dump();
      expect(refused.statusCode).toBe(413);
      expect(refused.headers.connection).toBe("close");
      const next = await client.request({ method: "GET", path: "/livez" });
      await next.body.dump();
      expect(next.statusCode).toBe(204);
    } finally {
      await client.close();
    }
  });
});
