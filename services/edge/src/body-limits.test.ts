import { randomBytes } from "node:crypto";
import { bufferedMemory, sendOverLimit } from "@gw/runtime/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningEdge, startEdge } from "./app.ts";
import { configSchema } from "./config.ts";
import { ADMIN_TOKEN, type EdgeTestDatabase, edgeTestDatabase, fakeClients } from "./testing.ts";

// Issue 27 item 1: every route of the edge has a body limit, enforced while reading and
// before any credential check, for a declared length and for a chunked body alike. A body
// far over the limit is answered 413 after a small part of it was sent, and the process
// does not buffer it.

const RECEIPT_MAX = 1024 * 1024;
const TOTAL = 64 * 1024 * 1024;

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
    RECEIPT_STORE_MAX_BYTES: String(RECEIPT_MAX),
  });
  edge = await startEdge(config, { clients: fakeClients({}) });
});
afterAll(async () => {
  await edge?.stop();
  await database?.close();
});

const routes = [
  ["a merchant create without a key", "/v1/payment", {}, "payload_too_large"],
  ["a receipt upload without a key", "/v1/confirm_payment", {}, "receipt_too_large"],
  ["an admin create", "/admin/v1/merchants", { authorization: `Bearer ${ADMIN_TOKEN}` }, "payload_too_large"],
  ["a provider callback", "/callbacks/providers/sandbox", {}, "payload_too_large"],
  ["a path no route serves", "/no/such/route", {}, "payload_too_large"],
] as const;

describe("the edge's body limits", () => {
  for (const chunked of [false, true]) {
    it.each(routes)(
      `answers 413 to ${chunked ? "a chunked" : "a declared"} 64 MiB body on %s, early and without buffering it`,
      async (_, path, headers, code) => {
        const before = bufferedMemory();
        const res = await sendOverLimit({
          url: `http://127.0.0.1:${edge.port}${path}`,
          headers,
          totalBytes: TOTAL,
          chunked,
        });
        expect(res.error).toBeUndefined();
        expect(res.status).toBe(413);
        expect(JSON.parse(res.body).error.code).toBe(code);
        expect(res.sentBeforeAnswer).toBeLessThan(TOTAL / 4);
        // A server that buffered the body would hold all 64 MiB of it (twice, as a string).
        expect(bufferedMemory() - before).toBeLessThan(TOTAL / 4);
      },
    );
  }
});
