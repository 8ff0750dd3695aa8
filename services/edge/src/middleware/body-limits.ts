import { type BodyLimitRule, bodyLimit } from "@gw/runtime";
import { ApiError, errorResponse } from "../errors.ts";
import { CONFIRM_PATH, FORM_OVERHEAD_BYTES, receiptTooLarge } from "../routes/receipts.ts";

/** The merchant and admin JSON bodies: every request the spec defines fits many times over. */
export const JSON_BODY_LIMIT_BYTES = 64 * 1024;
/** Provider callbacks: small JSON or form posts, unauthenticated until operations checks the signature. */
export const CALLBACK_BODY_LIMIT_BYTES = 64 * 1024;
/** Every other route (health, docs, receipt downloads, unknown paths) takes no body worth the name. */
export const OTHER_BODY_LIMIT_BYTES = 16 * 1024;

/** The edge's body limit per route (docs/operations.md lists the same table). */
export function edgeBodyLimitRules(receiptMaxBytes: number): BodyLimitRule[] {
  return [
    { path: CONFIRM_PATH, maxBytes: receiptMaxBytes + FORM_OVERHEAD_BYTES },
    { path: "/v1/*", maxBytes: JSON_BODY_LIMIT_BYTES },
    { path: "/admin/*", maxBytes: JSON_BODY_LIMIT_BYTES },
    { path: "/callbacks/*", maxBytes: CALLBACK_BODY_LIMIT_BYTES },
  ];
}

/**
 * The edge's body limits: the shared middleware (`@gw/runtime`'s `bodyLimit`) with the
 * table above, answering `413 payload_too_large` in the one error shape (a receipt upload
 * `413 receipt_too_large`, naming the field). Mounted before any credential check.
 */
export function edgeBodyLimits(receiptMaxBytes: number) {
  return bodyLimit({
    routes: edgeBodyLimitRules(receiptMaxBytes),
    otherwise: OTHER_BODY_LIMIT_BYTES,
    tooLarge: (c, maxBytes) =>
      errorResponse(
        c,
        c.req.path === CONFIRM_PATH
          ? receiptTooLarge(receiptMaxBytes)
          : new ApiError(413, "payload_too_large", `request body exceeds ${maxBytes} bytes`),
      ),
  });
}
