import { randomBytes } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { failure } from "@gw/rpc";
import { uploadRunsElsewhere } from "@gw/runtime/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningEdge, startEdge } from "./app.ts";
import { configSchema } from "./config.ts";
import { ADMIN_TOKEN, type EdgeTestDatabase, edgeTestDatabase, fakeClients } from "./testing.ts";

// Issue 26 item 4: a refusal given before the body is read must still reach a client that
// is writing the body (fetch + FormData, as a merchant's SDK sends a receipt): the edge
// reads and discards a body within its limit before it answers, and never resets the
// connection under the client.

const MISSING_OP = "0191a5e4-7c1b-7b8e-9d4e-000000000404";
const PENDING_OP = "0191a5e4-7c1b-7b8e-9d4e-000000000412";

let database: EdgeTestDatabase;
let edge: RunningEdge;
let apiKey = "";
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
  const clients = fakeClients({
    operations: {
      confirmPayment: async (req) => {
        if (req.operationId === MISSING_OP)
          throw failure(Code.NotFound, "operation_not_found", "operation not found");
        throw failure(Code.FailedPrecondition, "not_awaiting_confirmation", "the payment is pending");
      },
    },
  });
  edge = await startEdge(config, { clients });
  const admin = async (path: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${edge.port}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body ?? {}),
    });
    return (await res.json()) as Record<string, string>;
  };
  const merchant = await admin("/admin/v1/merchants", { name: "M" });
  const shop = await admin("/admin/v1/shops", { merchant_id: merchant.merchant_id, name: "S" });
  apiKey = (await admin(`/admin/v1/shops/${shop.shop_id}/api-keys`)).api_key ?? "";
}, 120_000);
afterAll(async () => {
  await edge?.stop();
  await database?.close();
});

describe("POST /v1/confirm_payment refused before or after its body is read", () => {
  const cases = [
    ["401 without a key", 401, "api_key_required", {}, MISSING_OP],
    ["401 with a key that is not (or no longer) valid", 401, "invalid_api_key", "bad", MISSING_OP],
    ["404 for an unknown payment", 404, "operation_not_found", "key", MISSING_OP],
    ["412 for a payment not awaiting confirmation", 412, "not_awaiting_confirmation", "key", PENDING_OP],
  ] as const;
  for (const fileBytes of [1024, 1024 * 1024]) {
    it.each(cases)(
      `answers %s to 200 uploads of ${fileBytes} bytes, every one read by the client`,
      async (_, status, code, auth, operationId) => {
        const result = await uploadRunsElsewhere(
          {
            url: `http://127.0.0.1:${edge.port}/v1/confirm_payment`,
            headers:
              auth === "key"
                ? { "x-api-key": apiKey }
                : auth === "bad"
                  ? { "x-api-key": `${apiKey.slice(0, -4)}0000` }
                  : {},
            fields: { operation_id: operationId, confirmation_type: "receipt" },
            fileBytes,
            runs: 200,
          },
          code,
        );
        expect(result.errors).toEqual([]);
        expect(result.badBodies).toEqual([]);
        expect(result.statuses).toEqual({ [status]: 200 });
      },
      120_000,
    );
  }
});
