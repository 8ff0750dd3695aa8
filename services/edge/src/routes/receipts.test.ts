import { Code } from "@connectrpc/connect";
import type {
  ConfirmPaymentRequest,
  ResolveReviewRequest,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import type { GetReceiptFileRequest } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { failure } from "@gw/rpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  admin,
  anOperation,
  aShopWithKey,
  type EdgeTestDatabase,
  edgeTestDatabase,
  type FakeServices,
  memoryLogger,
  testApp,
} from "../testing.ts";

// The edge's side of receipts: the multipart form and its limits, the download route's
// headers and refusals, and the admin review routes. The real services meet in
// services/operations/src/usecases/confirm.test.ts and tests/e2e/receipts.test.ts.

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const OP_ID = "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e";
const RECEIPT_ID = "5b0c3d7e-1f2a-4b3c-8d9e-0a1b2c3d4e5f";
/** A response's JSON body, read loosely: the tests check what they name. */
// biome-ignore lint/suspicious/noExplicitAny: a test reads whatever JSON came back.
const json = async (res: Response): Promise<any> => res.json();
const PDF = new TextEncoder().encode("%PDF-1.7\n...a receipt...\n%%EOF\n");

function form(fields: Record<string, string | Blob>, fileName = "receipt.pdf") {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) {
    if (typeof v === "string") f.append(k, v);
    else f.append(k, v, fileName);
  }
  return f;
}

function confirmingApp(fakes: FakeServices = {}, receiptMaxBytes = 1024 * 1024) {
  const calls: ConfirmPaymentRequest[] = [];
  const app = testApp(database, {
    receiptMaxBytes,
    fakes: {
      operations: {
        confirmPayment: async (req) => {
          calls.push(req);
          return {
            operation: anOperation({
              operationId: req.operationId,
              status: "completed",
              actualAmount: "1000.00",
            }),
          };
        },
      },
      ...fakes,
    },
  });
  return { app, calls };
}

const post = (
  app: ReturnType<typeof testApp>,
  apiKey: string | undefined,
  body: RequestInit["body"],
  headers = {},
) =>
  app.request("/v1/confirm_payment", {
    method: "POST",
    headers: { ...(apiKey ? { "x-api-key": apiKey } : {}), ...headers },
    body,
  });

describe("POST /v1/confirm_payment", () => {
  it("passes the file, its name and type and the key's scope to operations and answers the operation", async () => {
    const { app, calls } = confirmingApp();
    const shop = await aShopWithKey(app);
    const res = await post(
      app,
      shop.apiKey,
      form({
        operation_id: OP_ID,
        confirmation_type: "receipt",
        receipt: new Blob([PDF], { type: "application/pdf" }),
      }),
    );
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({
      operation_id: OP_ID,
      status: "completed",
      actual_amount: "1000.00",
    });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      operationId: OP_ID,
      confirmationType: "receipt",
      contentType: "application/pdf",
      fileName: "receipt.pdf",
      scope: { shopId: shop.shopId, merchantId: shop.merchantId },
    });
    expect(Buffer.from(calls[0]!.file).equals(Buffer.from(PDF))).toBe(true);
  });

  it("checks the key before the body: 401 for a missing key even with a malformed body", async () => {
    const { app, calls } = confirmingApp();
    const res = await post(app, undefined, "not a form", { "content-type": "text/plain" });
    expect(res.status).toBe(401);
    expect((await json(res)).error.code).toBe("api_key_required");
    expect(calls).toHaveLength(0);
  });

  it.each([
    ["operation_id missing", { confirmation_type: "receipt", receipt: new Blob([PDF]) }, "operation_id"],
    [
      "operation_id not a UUID",
      { operation_id: "42", confirmation_type: "receipt", receipt: new Blob([PDF]) },
      "operation_id",
    ],
    ["confirmation_type missing", { operation_id: OP_ID, receipt: new Blob([PDF]) }, "confirmation_type"],
    [
      "confirmation_type not receipt",
      { operation_id: OP_ID, confirmation_type: "photo", receipt: new Blob([PDF]) },
      "confirmation_type",
    ],
    ["receipt missing", { operation_id: OP_ID, confirmation_type: "receipt" }, "receipt"],
    [
      "receipt sent as text",
      { operation_id: OP_ID, confirmation_type: "receipt", receipt: "JVBERi0x" },
      "receipt",
    ],
    [
      "receipt empty",
      { operation_id: OP_ID, confirmation_type: "receipt", receipt: new Blob([]) },
      "receipt",
    ],
  ] as const)("answers 400 naming the field when the %s", async (_what, fields, field) => {
    const { app, calls } = confirmingApp();
    const shop = await aShopWithKey(app);
    const res = await post(app, shop.apiKey, form(fields as Record<string, string | Blob>));
    expect(res.status).toBe(400);
    expect((await json(res)).error).toMatchObject({ code: "validation_failed", field });
    expect(calls).toHaveLength(0);
  });

  it("answers 415 for a JSON body and 400 invalid_form for a broken multipart body", async () => {
    const { app } = confirmingApp();
    const shop = await aShopWithKey(app);
    const asJson = await post(app, shop.apiKey, JSON.stringify({ operation_id: OP_ID }), {
      "content-type": "application/json",
    });
    expect(asJson.status).toBe(415);
    const broken = await post(app, shop.apiKey, "--x\r\nnonsense", {
      "content-type": "multipart/form-data; boundary=zzz",
    });
    expect(broken.status).toBe(400);
    expect((await json(broken)).error.code).toBe("invalid_form");
  });

  it("answers 413 receipt_too_large for a file over the limit, declared or streamed", async () => {
    const { app, calls } = confirmingApp({}, 4096);
    const shop = await aShopWithKey(app);
    const overFile = await post(
      app,
      shop.apiKey,
      form({ operation_id: OP_ID, confirmation_type: "receipt", receipt: new Blob([new Uint8Array(5000)]) }),
    );
    expect(overFile.status).toBe(413);
    expect((await json(overFile)).error).toMatchObject({ code: "receipt_too_large", field: "receipt" });
    const huge = new Uint8Array(4096 + 65 * 1024);
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < huge.length; i += 8192) controller.enqueue(huge.subarray(i, i + 8192));
        controller.close();
      },
    });
    const streamed = await app.request("/v1/confirm_payment", {
      method: "POST",
      headers: { "x-api-key": shop.apiKey, "content-type": "multipart/form-data; boundary=zzz" },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(calls).toHaveLength(0);
  });

  it("maps operations' refusals: 404 for another shop's payment, 412 when not awaiting confirmation", async () => {
    const notFound = confirmingApp({
      operations: {
        confirmPayment: async () => {
          throw failure(Code.NotFound, "operation_not_found", "operation not found");
        },
      },
    }).app;
    const shop = await aShopWithKey(notFound);
    const fields = { operation_id: OP_ID, confirmation_type: "receipt", receipt: new Blob([PDF]) };
    const a = await post(notFound, shop.apiKey, form(fields));
    expect(a.status).toBe(404);
    expect((await json(a)).error.code).toBe("operation_not_found");
    const notAwaiting = confirmingApp({
      operations: {
        confirmPayment: async () => {
          throw failure(Code.FailedPrecondition, "not_awaiting_confirmation", "the payment is pending");
        },
      },
    }).app;
    const b = await post(notAwaiting, (await aShopWithKey(notAwaiting)).apiKey, form(fields));
    expect(b.status).toBe(412);
    expect((await json(b)).error.code).toBe("not_awaiting_confirmation");
  });

  it("is described in the OpenAPI document as multipart/form-data", async () => {
    const { app } = confirmingApp();
    const doc = await json(await app.request("/openapi.json"));
    expect(Object.keys(doc.paths["/v1/confirm_payment"].post.requestBody.content)).toEqual([
      "multipart/form-data",
    ]);
    expect(doc.paths["/receipts/{receipt_id}"].get).toBeDefined();
    expect(doc.paths["/admin/v1/operations/{operation_id}/review"].post).toBeDefined();
  });
});

describe("GET /receipts/{id}", () => {
  const link = `/receipts/${RECEIPT_ID}?exp=1900000000&sig=${"A".repeat(43)}`;

  function downloadApp(getReceiptFile: NonNullable<FakeServices["receipts"]>["getReceiptFile"]) {
    const calls: GetReceiptFileRequest[] = [];
    const { logger, lines } = memoryLogger();
    const app = testApp(database, {
      logger,
      fakes: {
        receipts: {
          getReceiptFile: async (req, ctx) => {
            calls.push(req);
            return getReceiptFile!(req, ctx);
          },
        },
      },
    });
    return { app, calls, lines };
  }

  const served = async () => ({
    file: PDF,
    contentType: "application/pdf",
    fileName: "чек 1.pdf",
    sha256: "x",
  });

  it("serves the file without a key, as an attachment that is never cached or referred", async () => {
    const { app, calls, lines } = downloadApp(served);
    const res = await app.request(link);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(PDF))).toBe(true);
    expect(res.headers.get("content-type")).toBe("application/pdf");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="/);
    expect(res.headers.get("content-disposition")).toContain("filename*=UTF-8''%D1%87%D0%B5%D0%BA%201.pdf");
    expect(res.headers.get("cache-control")).toBe("private, no-store");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(calls[0]?.link).toMatchObject({ receiptId: RECEIPT_ID, expires: 1900000000n });
    expect(calls[0]?.link?.shopId).toBeUndefined();
    // The signature is a credential: it never reaches the log.
    expect(lines.join("\n")).not.toContain("A".repeat(43));
  });

  it("passes the shop of a key sent along, and refuses an invalid key with 401", async () => {
    const { app, calls } = downloadApp(served);
    const shop = await aShopWithKey(app);
    expect((await app.request(link, { headers: { "x-api-key": shop.apiKey } })).status).toBe(200);
    expect(calls[0]?.link?.shopId).toBe(shop.shopId);
    expect((await app.request(link, { headers: { "x-api-key": "gw_live_nope" } })).status).toBe(401);
  });

  it("answers 410 for an expired link and 404 for an altered or malformed one", async () => {
    const expired = downloadApp(async () => {
      throw failure(Code.PermissionDenied, "receipt_url_expired", "the receipt link has expired");
    });
    const gone = await expired.app.request(link);
    expect(gone.status).toBe(410);
    expect((await json(gone)).error.code).toBe("receipt_url_expired");

    const altered = downloadApp(async () => {
      throw failure(Code.NotFound, "not_found", "receipt not found");
    });
    expect((await altered.app.request(link)).status).toBe(404);
    expect((await altered.app.request(`/receipts/${RECEIPT_ID}?exp=soon&sig=x`)).status).toBe(404);
    expect((await altered.app.request(`/receipts/not-a-uuid?exp=1&sig=${"A".repeat(43)}`)).status).toBe(404);
    // Malformed links never reach the receipts service.
    expect(altered.calls).toHaveLength(1);
  });

  it("answers 503 when the receipts service cannot serve links", async () => {
    const { app } = downloadApp(async () => {
      throw failure(Code.Unavailable, "receipt_evidence_unavailable", "no secret");
    });
    expect((await app.request(link)).status).toBe(503);
  });
});

describe("admin receipt review", () => {
  function reviewApp() {
    const calls: ResolveReviewRequest[] = [];
    const app = testApp(database, {
      fakes: {
        operations: {
          resolveReview: async (req) => {
            calls.push(req);
            return {
              operation: anOperation({
                operationId: req.operationId,
                status: req.decision === "approve" ? "completed" : "rejected",
                actualAmount: req.amount ?? "0.00",
              }),
              replayed: false,
            };
          },
          listManualChecks: async (req) => ({
            items: [
              {
                shopId: req.shopId ?? "s",
                operation: anOperation({ status: "manual_check", manualCheckReason: "potential_fake" }),
                receiptId: RECEIPT_ID,
                findings: [{ check: "incremental_update", outcome: "potential_fake", detail: "2 saves" }],
              },
            ],
          }),
        },
      },
    });
    return { app, calls };
  }

  it("passes an approval with its amount, operator and reason and answers the operation", async () => {
    const { app, calls } = reviewApp();
    const res = await admin(app, "POST", `/admin/v1/operations/${OP_ID}/review`, {
      decision: "approve",
      amount: "1500.00",
      operator: "alice",
      reason: "statement checked",
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      operation: { status: "completed", actual_amount: "1500.00" },
      replayed: false,
    });
    expect(calls[0]).toMatchObject({
      operationId: OP_ID,
      decision: "approve",
      amount: "1500.00",
      operator: "alice",
    });
  });

  it.each([
    [{ decision: "approve", operator: "a", reason: "r" }, "amount"],
    [{ decision: "reject", amount: "1.00", operator: "a", reason: "r" }, "amount"],
    [{ decision: "maybe", operator: "a", reason: "r" }, "decision"],
    [{ decision: "reject", operator: "a" }, "reason"],
    [{ decision: "reject", reason: "r", operator: " " }, "operator"],
  ])("refuses %j with 400 naming %s", async (body, field) => {
    const { app, calls } = reviewApp();
    const res = await admin(app, "POST", `/admin/v1/operations/${OP_ID}/review`, body);
    expect(res.status).toBe(400);
    expect((res.body.error as { field?: string }).field).toBe(field);
    expect(calls).toHaveLength(0);
  });

  it("lists the manual-check queue with the findings", async () => {
    const { app } = reviewApp();
    const res = await admin(app, "GET", "/admin/v1/manual-checks?limit=10");
    expect(res.status).toBe(200);
    expect(res.body.items).toEqual([
      expect.objectContaining({
        receipt_id: RECEIPT_ID,
        operation: expect.objectContaining({ status: "manual_check", manual_check_reason: "potential_fake" }),
        findings: [{ check: "incremental_update", outcome: "potential_fake", detail: "2 saves" }],
      }),
    ]);
  });
});
