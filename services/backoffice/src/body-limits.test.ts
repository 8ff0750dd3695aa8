import { bufferedMemory, sendOverLimit } from "@gw/runtime/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOGIN_BODY_LIMIT } from "./app.ts";
import { configSchema } from "./config.ts";
import { type RunningBackoffice, startBackoffice } from "./server.ts";
import { ADMIN_TOKEN, type BackofficeTestDatabase, backofficeTestDatabase } from "./testing.ts";

// Issue 27 item 1 for the back office's own process: every route behind the shared body
// limit (@gw/runtime), enforced while reading and before any cookie or form check, for a
// declared length and a chunked body alike.

const TOTAL = 64 * 1024 * 1024;

let database: BackofficeTestDatabase;
let backoffice: RunningBackoffice;
beforeAll(async () => {
  database = await backofficeTestDatabase();
  backoffice = await startBackoffice(
    configSchema.parse({
      DATABASE_URL: database.edge.testDb.url,
      PORT: "0",
      METRICS_PORT: "0",
      ADMIN_TOKEN,
      LOG_LEVEL: "silent",
    }),
  );
});
afterAll(async () => {
  await backoffice?.stop();
  await database?.close();
});

describe("the back office's body limits", () => {
  for (const chunked of [false, true])
    it.each([["/backoffice/login"], ["/backoffice/merchants"], ["/no/such/route"]])(
      `answers 413 to ${chunked ? "a chunked" : "a declared"} 64 MiB body on %s, early and without buffering it`,
      async (path) => {
        const before = bufferedMemory();
        const res = await sendOverLimit({
          url: `http://127.0.0.1:${backoffice.port}${path}`,
          headers: { "content-type": "application/x-www-form-urlencoded" },
          totalBytes: TOTAL,
          chunked,
        });
        expect(res.error).toBeUndefined();
        expect(res.status).toBe(413);
        expect(res.sentBeforeAnswer).toBeLessThan(TOTAL / 4);
        expect(bufferedMemory() - before).toBeLessThan(TOTAL / 4);
      },
    );

  it("keeps the login form's limit small: 4 KiB reaches the form check, 4 KiB + 1 is refused", async () => {
    const post = (bytes: number) =>
      fetch(`http://127.0.0.1:${backoffice.port}/backoffice/login`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          origin: `http://127.0.0.1:${backoffice.port}`,
        },
        body: `token=${"x".repeat(bytes - 6)}`,
      });
    expect((await post(LOGIN_BODY_LIMIT)).status).toBe(403);
    expect((await post(LOGIN_BODY_LIMIT + 1)).status).toBe(413);
  });
});
