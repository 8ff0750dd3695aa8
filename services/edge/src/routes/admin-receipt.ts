import { createRoute, z } from "@hono/zod-openapi";
import { CALL_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import { errorResponses, openApiApp } from "../schemas.ts";

/**
 * Admin: the receipt file of a payment in the manual-check queue, for an operator to
 * look at beside the requisites. The bytes are the receipts service's stored ones
 * (`GetReviewFile`, operators only, of the operation's latest review), always served as
 * `application/pdf` inline in a sandbox, never cached and never logged.
 */

/** A document served here runs nothing and reaches nothing. */
export const RECEIPT_FILE_CSP = "default-src 'none'; sandbox";

const route = createRoute({
  method: "get",
  path: "/manual-checks/{operation_id}/receipt",
  tags: ["admin: receipt review"],
  security: [{ AdminBearer: [] }],
  summary: "The receipt file of a payment's latest review (the one an operator decides on)",
  description:
    "The stored bytes as the payer uploaded them, served as `application/pdf` with " +
    "`Content-Disposition: inline`, `Cache-Control: private, no-store` and a sandboxing CSP. " +
    "404 `not_found` when the payment has no receipt; 503 `receipt_evidence_unavailable` when the " +
    "stored file is missing.",
  request: {
    params: z.object({
      operation_id: z
        .uuid({ error: "operation_id must be a UUID" })
        .openapi({ param: { name: "operation_id", in: "path" } }),
    }),
  },
  responses: {
    200: {
      description: "The receipt file.",
      content: { "application/pdf": { schema: z.string().openapi({ format: "binary" }) } },
    },
    ...errorResponses(400, 401, 404, 503),
  },
});

/** The headers of a receipt shown to an operator; `frameAncestors` lets the back office embed it. */
export function receiptFileHeaders(receiptId: string, length: number, frameAncestors = "'none'") {
  return {
    "content-type": "application/pdf",
    "content-length": String(length),
    "content-disposition": `inline; filename="receipt-${receiptId.replace(/[^0-9a-f-]/gi, "")}.pdf"`,
    "cache-control": "private, no-store",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "content-security-policy": `${RECEIPT_FILE_CSP}; frame-ancestors ${frameAncestors}`,
  };
}

/** `GET /admin/v1/manual-checks/{operation_id}/receipt`. */
export function adminReceiptRoutes(clients: EdgeClients) {
  return openApiApp().openapi(route, async (c) => {
    const res = await clients.receipts.getReviewFile(
      { id: { case: "operationId", value: c.req.valid("param").operation_id } },
      { timeoutMs: CALL_TIMEOUT_MS },
    );
    // biome-ignore lint/suspicious/noExplicitAny: a binary body the JSON-typed route cannot describe.
    return c.body(new Uint8Array(res.file), 200, receiptFileHeaders(res.receiptId, res.file.length)) as any;
  });
}
