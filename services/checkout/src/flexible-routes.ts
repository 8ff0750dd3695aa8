import { ConnectError } from "@connectrpc/connect";
import { Decimal } from "@gw/money";
import type { FlexibleInterval, FlexibleLinkResponse } from "@gw/proto/gateway/operations/v1/operations_pb";
import { errorInfo } from "@gw/rpc";
import { type Context, Hono } from "hono";
import { type Lang, messages } from "./i18n.ts";
import { isNotFound, langOf, type PageDeps, READ_TIMEOUT_MS, readPage } from "./payment-routes.ts";
import {
  linkExpiredPage,
  notFoundPage,
  type PickerChoice,
  pageQuery,
  paymentPage,
  pickerPage,
  unavailablePage,
} from "./render.ts";

/**
 * The amount picker of a flexible link, `GET /{operation_id}?k=...`. Without the right
 * `k` the page is the one not-found page. In `amount_selection` it offers the amounts
 * available now (one field or a list of ranges, as the shop is configured); confirming
 * (`POST /{operation_id}/amount`, `k` in the form) creates the payment at that amount and
 * shows its page, an amount taken meanwhile shows the refreshed choice with a message,
 * and an expired link says so and creates nothing. Once a payment exists the page is
 * the payment's own page, reached with the same URL.
 */

/** Confirming creates the payment: operations waits for the pool and the providers. */
const CONFIRM_TIMEOUT_MS = 20_000;
const AMOUNT = /^(0|[1-9]\d{0,15})([.,]\d{1,2})?$/;

/** The amount of `[min, max]` nearest to `recommended`. */
export function nearest(recommended: string, min: string, max: string): string {
  const r = new Decimal(recommended);
  if (r.lt(min)) return new Decimal(min).toFixed(2);
  if (r.gt(max)) return new Decimal(max).toFixed(2);
  return r.toFixed(2);
}

/** The choices of a picker, nearest to the recommended amount first. */
export function choicesOf(recommended: string, intervals: FlexibleInterval[]): PickerChoice[] {
  return intervals
    .map((i) => ({
      min: i.minAmount,
      max: i.maxAmount,
      offer: nearest(recommended, i.minAmount, i.maxAmount),
    }))
    .sort((a, b) => {
      const da = new Decimal(a.offer).minus(recommended).abs();
      const db = new Decimal(b.offer).minus(recommended).abs();
      return da.cmp(db) || new Decimal(a.offer).cmp(b.offer);
    });
}

const expired = (res: FlexibleLinkResponse) =>
  res.link?.status === "expired" ||
  (res.link?.status === "amount_selection" &&
    res.link.expiresAt !== undefined &&
    Date.parse(res.link.expiresAt) <= Date.now());

/** The routes of the flexible link's page. */
export function flexibleRoutes(deps: PageDeps) {
  const picker = (
    c: Context,
    id: string,
    k: string,
    res: FlexibleLinkResponse,
    extra: { error?: string; notice?: string; value?: string; status?: number } = {},
  ) => {
    const link = res.link!;
    return c.html(
      pickerPage({
        operationId: id,
        k,
        lang: langOf(c),
        picker: link.picker,
        currency: link.currency,
        recommended: link.recommendedAmount,
        choices: choicesOf(link.recommendedAmount, res.intervals),
        expiresAt: link.expiresAt,
        ...extra,
      }),
      (extra.status ?? 200) as 200,
    );
  };

  const paymentOf = async (c: Context, id: string, k: string, lang: Lang) => {
    const found = await readPage(deps, id, k);
    if (!found) return c.html(notFoundPage(lang), 404);
    return c.html(paymentPage({ page: found.page, lang, maxBytes: deps.receiptMaxBytes, k }));
  };

  const unavailable = (c: Context, err: unknown) => {
    deps.logger.warn({ err, path: c.req.path }, "flexible link page failed");
    return c.html(unavailablePage(langOf(c)), 503);
  };

  return new Hono()
    .get("/:operation_id", async (c) => {
      const id = c.req.param("operation_id");
      const k = c.req.query("k") ?? "";
      const lang = langOf(c);
      try {
        const res = await deps.operations.getFlexibleLink(
          { operationId: id, k },
          { timeoutMs: READ_TIMEOUT_MS },
        );
        const status = res.link?.status;
        if (!res.link || status === "ordinary") return c.html(notFoundPage(lang), 404);
        if (expired(res)) return c.html(linkExpiredPage(lang, k), 410);
        if (status === "amount_selection") return picker(c, id, k, res);
        return await paymentOf(c, id, k, lang);
      } catch (err) {
        if (isNotFound(err)) return c.html(notFoundPage(lang), 404);
        return unavailable(c, err);
      }
    })
    .post("/:operation_id/amount", async (c) => {
      const id = c.req.param("operation_id");
      const lang = langOf(c);
      const m = messages(lang);
      const origin = c.req.header("origin");
      if (origin && URL.canParse(origin) && new URL(origin).host !== c.req.header("host"))
        return c.html(notFoundPage(lang), 404);
      const form = await c.req.parseBody();
      const k = typeof form.k === "string" ? form.k : "";
      const raw = typeof form.amount === "string" ? form.amount.trim().replace(/\s/g, "") : "";
      const back = `/${id}${pageQuery(lang, k)}`;
      try {
        if (!AMOUNT.test(raw)) {
          const res = await deps.operations.getFlexibleLink(
            { operationId: id, k },
            { timeoutMs: READ_TIMEOUT_MS },
          );
          if (!res.link) return c.html(notFoundPage(lang), 404);
          if (expired(res)) return c.html(linkExpiredPage(lang, k), 410);
          if (res.link.status !== "amount_selection") return c.redirect(back, 303);
          return picker(c, id, k, res, { error: m.pickInvalid, value: raw, status: 400 });
        }
        const amount = new Decimal(raw.replace(",", ".")).toFixed(2);
        const res = await deps.operations.confirmFlexibleAmount(
          { operationId: id, k, amount },
          { timeoutMs: CONFIRM_TIMEOUT_MS },
        );
        if (res.outcome === "expired") return c.html(linkExpiredPage(lang, k), 410);
        if (res.outcome === "amount_unavailable")
          return picker(c, id, k, res, { notice: m.pickTaken, status: 409 });
        // created, rejected, or a decision made before: the payment's own page.
        return c.redirect(back, 303);
      } catch (err) {
        if (isNotFound(err) && errorInfo(err)?.code !== "validation_failed")
          return c.html(notFoundPage(lang), 404);
        if (err instanceof ConnectError && errorInfo(err)?.code === "validation_failed") {
          const res = await deps.operations
            .getFlexibleLink({ operationId: id, k }, { timeoutMs: READ_TIMEOUT_MS })
            .catch(() => undefined);
          if (res?.link?.status === "amount_selection")
            return picker(c, id, k, res, { error: m.pickOutside, value: raw, status: 400 });
          return c.redirect(back, 303);
        }
        if (errorInfo(err)?.code === "flexible_link_expired") return c.html(linkExpiredPage(lang, k), 410);
        return unavailable(c, err);
      }
    });
}
