import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import type { OperationsService, PaymentPage } from "@gw/proto/gateway/operations/v1/operations_pb";
import { errorInfo } from "@gw/rpc";
import { type Context, Hono } from "hono";
import { fill, type Lang, messages, pickLang } from "./i18n.ts";
import { notFoundPage, pageQuery, paymentPage, unavailablePage } from "./render.ts";

/**
 * The payer's page of a payment created through `POST /v1/payment/link` with the hosted
 * page on: `GET /{operation_id}` (the page), `GET /{operation_id}/state` (its outcome, for
 * the script that follows the payment live) and `POST /{operation_id}/receipt` (the PDF
 * receipt, passed to operations' `ConfirmPayment` as the merchant's confirm_payment
 * would). Anything operations does not show as a hosted payment is the one not-found page.
 */

export interface PageDeps {
  operations: Client<typeof OperationsService>;
  logger: Logger;
  /** The largest receipt accepted: the receipts service's storage limit. */
  receiptMaxBytes: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A read of the page must answer quickly; the payer reloads if not. */
export const READ_TIMEOUT_MS = 5_000;
/** The review reads the PDF in a bounded worker; operations allows it 25 s. */
const CONFIRM_TIMEOUT_MS = 30_000;
/** Room for the multipart framing around the file (the receipt route's body limit is the file's plus this). */
export const FORM_OVERHEAD_BYTES = 64 * 1024;

/** The language of this request. */
export const langOf = (c: Context) => pickLang(c.req.query("lang"), c.req.header("accept-language"));

/** Not found and a malformed id are the same answer: nothing is confirmed. */
export const isNotFound = (err: unknown) =>
  err instanceof ConnectError && (err.code === Code.NotFound || err.code === Code.InvalidArgument);

/** Reads the page of a hosted payment; undefined when there is none to show. */
export async function readPage(deps: PageDeps, operationId: string, k?: string) {
  if (!UUID.test(operationId)) return undefined;
  try {
    const res = await deps.operations.getPaymentPage({ operationId, k }, { timeoutMs: READ_TIMEOUT_MS });
    return res.page ? { page: res.page, scope: res.scope } : undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Why an upload was refused, as the payer reads it, with the HTTP status. */
type UploadRefusal = { status: 400 | 404 | 409 | 413 | 503; message: string };

function refusalOf(err: unknown, lang: Lang, maxMb: string): UploadRefusal {
  const m = messages(lang);
  const code = errorInfo(err)?.code;
  if (err instanceof ConnectError) {
    if (err.code === Code.NotFound) return { status: 404, message: m.notFoundText };
    if (code === "receipt_too_large") return { status: 413, message: fill(m.errTooLarge, { max: maxMb }) };
    if (code === "receipt_already_reviewed") return { status: 409, message: m.errAlreadyReviewed };
    if (code === "receipt_review_in_progress") return { status: 409, message: m.errInProgress };
    if (code === "not_awaiting_confirmation") return { status: 409, message: m.errNotAwaiting };
    if (err.code === Code.InvalidArgument) return { status: 400, message: m.errNotPdf };
  }
  return { status: 503, message: m.errUnavailable };
}

/** The routes of the payer's payment page. */
export function paymentRoutes(deps: PageDeps) {
  const maxMb = String(Math.floor(deps.receiptMaxBytes / (1024 * 1024)) || 1);

  const render = (c: Context, page: PaymentPage, extra: { error?: string; status?: number } = {}) =>
    c.html(
      paymentPage({
        page,
        lang: langOf(c),
        maxBytes: deps.receiptMaxBytes,
        error: extra.error,
        k: c.req.query("k") || undefined,
      }),
      (extra.status ?? 200) as 200,
    );

  const failed = (c: Context, err: unknown) => {
    // The path only: a query may carry a link credential.
    deps.logger.warn({ err, path: c.req.path }, "payment page read failed");
    return c.html(unavailablePage(langOf(c)), 503);
  };

  return new Hono()
    .get("/:operation_id/state", async (c) => {
      try {
        const found = await readPage(deps, c.req.param("operation_id"), c.req.query("k") || undefined);
        if (!found) return c.json({ error: "not_found" }, 404);
        return c.json({ outcome: found.page.outcome });
      } catch (err) {
        deps.logger.warn({ err, path: c.req.path }, "payment state read failed");
        return c.json({ error: "unavailable" }, 503);
      }
    })
    .post("/:operation_id/receipt", async (c) => {
      const lang = langOf(c);
      const m = messages(lang);
      const wantsJson = (c.req.header("accept") ?? "").includes("application/json");
      // A form posted from another site is refused: only this page uploads here.
      const origin = c.req.header("origin");
      if (origin && URL.canParse(origin) && new URL(origin).host !== c.req.header("host"))
        return c.html(notFoundPage(lang), 404);
      const k = c.req.query("k") || undefined;
      let found: Awaited<ReturnType<typeof readPage>>;
      try {
        found = await readPage(deps, c.req.param("operation_id"), k);
      } catch (err) {
        return failed(c, err);
      }
      if (!found) return c.html(notFoundPage(lang), 404);
      const refuse = (r: UploadRefusal) =>
        wantsJson
          ? c.json({ error: true, message: r.message }, r.status)
          : render(c, found.page, { error: r.message, status: r.status });

      // The body is bounded by checkout's body limit (body-limits.ts) before this route runs.
      if (!/^multipart\/form-data\s*;/i.test(c.req.header("content-type") ?? ""))
        return refuse({ status: 400, message: m.errNoFile });
      let file: File | undefined;
      try {
        const form = await c.req.formData();
        const value = form.get("receipt");
        file = value instanceof File ? value : undefined;
      } catch {
        return refuse({ status: 400, message: m.errNoFile });
      }
      // The same checks the script makes before sending, for a browser without it.
      if (!file || (file.size === 0 && file.name === ""))
        return refuse({ status: 400, message: m.errNoFile });
      if (file.size === 0) return refuse({ status: 400, message: m.errEmpty });
      if (file.size > deps.receiptMaxBytes)
        return refuse({ status: 413, message: fill(m.errTooLarge, { max: maxMb }) });
      const bytes = new Uint8Array(await file.arrayBuffer());
      if (Buffer.from(bytes.subarray(0, 5)).toString("latin1") !== "%PDF-")
        return refuse({ status: 400, message: m.errNotPdf });

      try {
        const res = await deps.operations.confirmPayment(
          {
            scope: found.scope,
            operationId: found.page.operationId,
            confirmationType: "receipt",
            file: bytes,
            contentType: file.type || "application/pdf",
            fileName: file.name || undefined,
          },
          { timeoutMs: CONFIRM_TIMEOUT_MS },
        );
        const status = res.operation?.status ?? "";
        if (wantsJson) return c.json({ ok: true, status });
        return c.redirect(`/${found.page.operationId}${pageQuery(lang, k)}`, 303);
      } catch (err) {
        const refusal = refusalOf(err, lang, maxMb);
        if (refusal.status === 503) deps.logger.warn({ err, path: c.req.path }, "receipt upload failed");
        return refuse(refusal);
      }
    })
    .get("/:operation_id", async (c, next) => {
      // A flexible link's page (`?k=`) is served by the flexible routes.
      if (c.req.query("k") !== undefined) return next();
      let found: Awaited<ReturnType<typeof readPage>>;
      try {
        found = await readPage(deps, c.req.param("operation_id"));
      } catch (err) {
        return failed(c, err);
      }
      if (!found) return c.html(notFoundPage(langOf(c)), 404);
      return render(c, found.page);
    });
}
