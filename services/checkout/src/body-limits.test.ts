import { Code, createClient, createRouterTransport } from "@connectrpc/connect";
import { OperationsService } from "@gw/proto/gateway/operations/v1/operations_pb";
import { failure } from "@gw/rpc";
import { bufferedMemory, sendOverLimit, uploadRunsElsewhere } from "@gw/runtime/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningCheckout, startCheckout } from "./app.ts";
import { configSchema } from "./config.ts";

// Issue 27 item 1 and issue 26 item 4 on the pay pages: every route has a body limit,
// enforced while reading and before the link is looked up; a refusal within the limit
// reaches the payer's browser (fetch + FormData) on every run.

const RECEIPT_MAX = 1024 * 1024;
const TOTAL = 64 * 1024 * 1024;
const MISSING = "0190b2a4-6f0e-7000-8000-000000000404";
const PAID = "0190b2a4-6f0e-7000-8000-000000000409";

let checkout: RunningCheckout;
beforeAll(async () => {
  const transport = createRouterTransport((router) =>
    router.service(OperationsService, {
      getPaymentPage: async (req) => {
        if (req.operationId !== PAID) throw failure(Code.NotFound, "not_found", "no such payment");
        return { page: { operationId: PAID, amount: "10.00", currency: "RUB", outcome: "paid" } };
      },
      confirmPayment: async () => {
        throw failure(Code.FailedPrecondition, "not_awaiting_confirmation", "the payment is paid");
      },
      getFlexibleLink: async () => {
        throw failure(Code.NotFound, "not_found", "no such link");
      },
    }),
  );
  checkout = await startCheckout(
    configSchema.parse({
      PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: "silent",
      RECEIPT_STORE_MAX_BYTES: String(RECEIPT_MAX),
    }),
    { operations: createClient(OperationsService, transport) },
  );
});
afterAll(async () => {
  await checkout?.stop();
});

const routes = [
  ["a flexible link's amount form", `/${MISSING}/amount`],
  ["a receipt upload", `/${PAID}/receipt`],
  ["a path no route serves", "/no/such/route"],
] as const;

describe("checkout's body limits", () => {
  for (const chunked of [false, true]) {
    it.each(routes)(
      `answers 413 to ${chunked ? "a chunked" : "a declared"} 64 MiB body on %s, early and without buffering it`,
      async (_, path) => {
        const before = bufferedMemory();
        const res = await sendOverLimit({
          url: `http://127.0.0.1:${checkout.port}${path}`,
          totalBytes: TOTAL,
          chunked,
        });
        expect(res.error).toBeUndefined();
        expect(res.status).toBe(413);
        expect(res.sentBeforeAnswer).toBeLessThan(TOTAL / 4);
        // A server that buffered the body would hold all 64 MiB of it.
        expect(bufferedMemory() - before).toBeLessThan(TOTAL / 4);
      },
    );
  }

  it("keeps the amount form's limit small: 4 KiB is read as a form, 4 KiB + 1 is refused", async () => {
    const post = (bytes: number) =>
      fetch(`http://127.0.0.1:${checkout.port}/${MISSING}/amount`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `k=${"x".repeat(bytes - 2)}`,
      });
    expect((await post(4096)).status).toBe(404);
    expect((await post(4097)).status).toBe(413);
  });
});

describe("a receipt upload refused before or after its body is read", () => {
  const cases = [
    ["404 for an unknown payment (before the body)", MISSING, 404, { contains: "</html>" }],
    ["409 for a payment not awaiting a receipt (after the body)", PAID, 409, { contains: '"error":true' }],
  ] as const;
  for (const fileBytes of [1024, 1024 * 1024]) {
    it.each(cases)(
      `answers %s to 200 uploads of ${fileBytes} bytes, every one read by the client`,
      async (_, id, status, expected) => {
        const result = await uploadRunsElsewhere(
          {
            url: `http://127.0.0.1:${checkout.port}/${id}/receipt?k=secret`,
            headers: { accept: "application/json" },
            fileBytes,
            runs: 200,
          },
          expected,
        );
        expect(result.errors).toEqual([]);
        expect(result.badBodies).toEqual([]);
        expect(result.statuses).toEqual({ [status]: 200 });
      },
      120_000,
    );
  }
});
