import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { operationJson } from "@gw/api";
import { ScopeSchema } from "@gw/proto/gateway/common/v1/common_pb";
import { errorInfo } from "@gw/rpc";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import { Hono } from "hono";
import { CALL_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import type { EdgeEnv } from "../env.ts";
import { ApiError, invalidField, notFound } from "../errors.ts";
import { hashApiKey, looksLikeApiKey } from "../keys.ts";
import { errorResponses, jsonResponse, OperationSchema } from "../schemas.ts";
import type { EdgeStore } from "../store.ts";
import { isUuid } from "../store.ts";

/**
 * Receipt confirmation (`POST /v1/confirm_payment`, multipart) and the signed receipt
 * download (`GET /receipts/{id}?exp=&sig=`). The edge checks the form's shape and size;
 * operations checks the payment and asks the receipts service for the verdict; the
 * receipts service verifies links and serves the stored bytes.
 */

export const CONFIRM_PATH = "/v1/confirm_payment";
/** Room for the form's other fields and the multipart framing around the file. */
export const FORM_OVERHEAD_BYTES = 64 * 1024;
/** The review reads the PDF in a bounded worker behind a bounded queue; operations allows 25 s. */
const CONFIRM_TIMEOUT_MS = 30_000;
const MULTIPART = /^multipart\/form-data\s*;/i;
const SIGNATURE = /^[A-Za-z0-9_-]{16,128}$/;

/** The 413 of a receipt over the limit, from the form (here) or from the body limit (middleware/body-limits.ts). */
export const receiptTooLarge = (maxBytes: number) =>
  new ApiError(413, "receipt_too_large", `the receipt must be at most ${maxBytes} bytes`, "receipt");

const text = (form: FormData, field: string): string | undefined => {
  const value = form.get(field);
  if (value === null) return undefined;
  if (typeof value !== "string") throw invalidField(field, `${field} must be a text field`);
  return value;
};

/**
 * `POST /v1/confirm_payment`, mounted after the API key check (the key is checked before
 * the body is read) and behind the edge's body limit (receipt limit + form overhead).
 */
export function confirmRoutes(clients: EdgeClients, receiptMaxBytes: number) {
  return new Hono<EdgeEnv>().post("/confirm_payment", async (c) => {
    const contentType = c.req.header("content-type") ?? "";
    if (!MULTIPART.test(contentType))
      throw new ApiError(415, "unsupported_media_type", "the request body must be multipart/form-data");
    let form: FormData;
    try {
      form = await c.req.formData();
    } catch {
      throw new ApiError(400, "invalid_form", "the request body is not a valid multipart/form-data body");
    }

    const operationId = text(form, "operation_id");
    if (operationId === undefined || operationId === "")
      throw invalidField("operation_id", "operation_id is required");
    if (!isUuid(operationId)) throw invalidField("operation_id", "operation_id must be a UUID");
    const confirmationType = text(form, "confirmation_type");
    if (confirmationType === undefined || confirmationType === "")
      throw invalidField("confirmation_type", "confirmation_type is required");
    if (confirmationType !== "receipt")
      throw invalidField("confirmation_type", "confirmation_type must be receipt");
    const receipt = form.get("receipt");
    if (receipt === null || typeof receipt === "string")
      throw invalidField("receipt", "receipt is required: a file part with the PDF receipt");
    if (receipt.size === 0) throw invalidField("receipt", "the receipt file is empty");
    if (receipt.size > receiptMaxBytes) throw receiptTooLarge(receiptMaxBytes);

    const scope = c.get("scope");
    const res = await clients.operations.confirmPayment(
      {
        scope: create(ScopeSchema, { merchantId: scope.merchantId, shopId: scope.shopId }),
        operationId,
        confirmationType,
        file: new Uint8Array(await receipt.arrayBuffer()),
        contentType: receipt.type || "application/octet-stream",
        fileName: receipt.name ? receipt.name.slice(0, 255) : undefined,
      },
      { timeoutMs: CONFIRM_TIMEOUT_MS },
    );
    if (!res.operation)
      throw new ApiError(503, "dependency_unavailable", "a dependency is unavailable, retry later");
    return c.json(operationJson(res.operation));
  });
}

/** A media type safe to echo back; anything else is served as bytes. */
const SAFE_MEDIA_TYPE = /^[\w.+-]+\/[\w.+-]+$/;

/** `attachment` with an ASCII fallback name and the exact name in RFC 5987 form. */
function contentDisposition(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\%;]/g, "_").slice(0, 100) || "receipt.pdf";
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName.slice(0, 200))}`;
}

/**
 * `GET /receipts/{receipt_id}?exp=&sig=`: the stored receipt behind a signed link. The
 * link is the credential (it sits outside `/v1`, which needs a key). A caller that does
 * send `X-API-Key` is authenticated, and a link of another shop is then refused like an
 * altered one (404). An expired link is 410 `receipt_url_expired`. The query string is
 * never logged (the request log names the path only).
 */
export function receiptDownloadRoutes(clients: EdgeClients, store: EdgeStore) {
  return new Hono<EdgeEnv>().get("/:receipt_id", async (c) => {
    let shopId: string | undefined;
    const key = c.req.header("x-api-key");
    if (key !== undefined) {
      const scope = looksLikeApiKey(key) ? await store.scopeOfKey(hashApiKey(key)) : undefined;
      if (!scope) throw new ApiError(401, "invalid_api_key", "invalid api key");
      c.set("scope", scope);
      shopId = scope.shopId;
    }
    const receiptId = c.req.param("receipt_id");
    const exp = c.req.query("exp") ?? "";
    const sig = c.req.query("sig") ?? "";
    if (!isUuid(receiptId) || !/^\d{1,12}$/.test(exp) || !SIGNATURE.test(sig))
      throw notFound("receipt not found");
    let file: Awaited<ReturnType<EdgeClients["receipts"]["getReceiptFile"]>>;
    try {
      file = await clients.receipts.getReceiptFile(
        { link: { receiptId, expires: BigInt(exp), signature: sig, shopId } },
        { timeoutMs: CALL_TIMEOUT_MS },
      );
    } catch (err) {
      // The receipts service's own refusal (its one PERMISSION_DENIED, `receipt_url_expired`)
      // carries ErrorInfo; a refused service token does not.
      if (err instanceof ConnectError && err.code === Code.PermissionDenied && errorInfo(err))
        throw new ApiError(410, "receipt_url_expired", "the receipt link has expired");
      if (err instanceof ConnectError && err.code === Code.NotFound) throw notFound("receipt not found");
      throw err;
    }
    const type = SAFE_MEDIA_TYPE.test(file.contentType) ? file.contentType : "application/octet-stream";
    return c.body(new Uint8Array(file.file), 200, {
      "content-type": type,
      "content-length": String(file.file.length),
      "content-disposition": contentDisposition(file.fileName || `receipt-${receiptId}.pdf`),
      "cache-control": "private, no-store",
      "referrer-policy": "no-referrer",
      "x-content-type-options": "nosniff",
      "content-security-policy": "default-src 'none'; sandbox",
    });
  });
}

/** The OpenAPI description of the two routes above. */
export function describeReceiptRoutes(app: OpenAPIHono<EdgeEnv>, receiptMaxBytes: number): void {
  const registry = app.openAPIRegistry;
  registry.registerPath({
    method: "post",
    path: CONFIRM_PATH,
    tags: ["merchant API"],
    security: [{ ApiKey: [] }],
    summary: "Confirm a payment with the payer's receipt",
    description: [
      "For a payment in `awaiting_confirmation` (or in `manual_check` with reason `not_terminal`).",
      "The receipt is stored and reviewed; the answer is the payment after the review:",
      "`completed` (with `actual_amount` = the receipt's amount), `rejected` (the receipt shows a failed",
      "transfer), or `manual_check` with `manual_check_reason` (`potential_fake`: an operator decides;",
      "`not_terminal`: the transfer is still in progress or the file could not be read, send another).",
      "Sending the same file again answers the recorded result. Another file is reviewed only in",
      "`manual_check`/`not_terminal`; in `manual_check`/`potential_fake` it gets `412 receipt_already_reviewed`.",
      `The file may be at most ${receiptMaxBytes} bytes (413 \`receipt_too_large\`).`,
      "Errors: 400 `validation_failed` (field `operation_id`, `confirmation_type` or `receipt`),",
      "400 `invalid_form`, 404 `operation_not_found` (also another shop's payment),",
      "412 `not_awaiting_confirmation` (pending, terminal, or a payout), 412 `receipt_already_reviewed`,",
      "412 `receipt_review_in_progress` (another upload of this payment is being checked), 413",
      "`receipt_too_large`, 415 `unsupported_media_type` (not multipart/form-data), 503.",
    ].join(" "),
    request: {
      body: {
        content: {
          "multipart/form-data": {
            schema: z.object({
              operation_id: z.string().openapi({ format: "uuid" }),
              confirmation_type: z.enum(["receipt"]),
              receipt: z.string().openapi({ format: "binary", description: "The PDF receipt." }),
            }),
          },
        },
      },
    },
    responses: {
      200: jsonResponse(OperationSchema, "The payment after the review."),
      ...errorResponses(400, 401, 404, 412, 413, 415, 503),
    },
  });
  registry.registerPath({
    method: "get",
    path: "/receipts/{receipt_id}",
    tags: ["merchant API"],
    summary: "Download a receipt through its signed link (`receipt_url`)",
    description:
      "The link from `receipts[].receipt_url` is the credential and lives a few minutes. No key is needed; " +
      "a request that sends `X-API-Key` is refused (404) when the link belongs to another shop. Answers the " +
      "stored file as an attachment with `Cache-Control: private, no-store` and `Referrer-Policy: no-referrer`. " +
      "An altered or unknown link is 404; an expired one 410 `receipt_url_expired`.",
    request: {
      params: z.object({
        receipt_id: z.string().openapi({ param: { name: "receipt_id", in: "path" }, format: "uuid" }),
      }),
      query: z.object({
        exp: z.string().openapi({ param: { name: "exp", in: "query" }, description: "Unix seconds." }),
        sig: z.string().openapi({ param: { name: "sig", in: "query" }, description: "The link's MAC." }),
      }),
    },
    responses: {
      200: {
        description: "The receipt file.",
        content: { "application/pdf": { schema: z.string().openapi({ format: "binary" }) } },
      },
      ...errorResponses(401, 404, 503),
      410: {
        description:
          "The link has expired (`receipt_url_expired`); read the operation state for a fresh one.",
        content: {
          "application/json": { schema: errorResponses(410)[410].content["application/json"].schema },
        },
      },
    },
  });
}
