import { Client } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningCheckout, startCheckout } from "./app.ts";
import { configSchema } from "./config.ts";

let checkout: RunningCheckout;
beforeAll(async () => {
  // Operations is never called here: the upload below is refused by its size before any read.
  checkout = await startCheckout(
    configSchema.parse({
      PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: "silent",
      RECEIPT_STORE_MAX_BYTES: "1024",
    }),
  );
});
afterAll(async () => {
  await checkout?.stop();
});

describe("checkout answering a request without reading its body", () => {
  it("closes the connection after refusing a 2 MiB upload, so a keep-alive client's next request succeeds", async () => {
    const client = new Client(`http://127.0.0.1:${checkout.port}`, { pipelining: 1 });
    try {
      const refused = await client.request({
        method: "POST",
        path: "/0190b2a4-6f0e-7000-8000-000000000001/receipt?k=x",
        // Over the receipt route's body limit: refused before anything else of the route runs.
        headers: { origin: "https://elsewhere.example", "content-type": "application/octet-stream" },
        body: Buffer.alloc(2 * 1024 * 1024, 1),
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
