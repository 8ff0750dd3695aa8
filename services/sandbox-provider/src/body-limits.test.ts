import { createTestDatabase, type TestDatabase } from "@gw/db";
import { bufferedMemory, sendOverLimit } from "@gw/runtime/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningSandbox, startSandbox } from "./app.ts";
import { configSchema } from "./config.ts";

// Issue 27 item 1 on the sandbox provider: every route has a body limit, enforced while
// reading and before any handler parses, for a declared length and a chunked body alike.

const TOTAL = 64 * 1024 * 1024;

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

const routes = [
  ["a payin create", "POST", "/providers/acme/v1/payins"],
  ["a provider's settings (control API)", "PUT", "/control/providers/acme"],
  ["a path no route serves", "POST", "/no/such/route"],
] as const;

describe("the sandbox's body limits", () => {
  for (const chunked of [false, true]) {
    it.each(routes)(
      `answers 413 to ${chunked ? "a chunked" : "a declared"} 64 MiB body on %s, early and without buffering it`,
      async (_, method, path) => {
        const before = bufferedMemory();
        const res = await sendOverLimit({
          url: `http://127.0.0.1:${sandbox.port}${path}`,
          method,
          headers: { "content-type": "application/json" },
          totalBytes: TOTAL,
          chunked,
        });
        expect(res.error).toBeUndefined();
        expect(res.status).toBe(413);
        expect(JSON.parse(res.body).error.code).toBe("payload_too_large");
        expect(res.sentBeforeAnswer).toBeLessThan(TOTAL / 4);
        // A server that buffered the body would hold all 64 MiB of it.
        expect(bufferedMemory() - before).toBeLessThan(TOTAL / 4);
      },
    );
  }
});
