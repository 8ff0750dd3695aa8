import { type BodyLimitRule, bodyLimit } from "@gw/runtime";
import { fill, messages } from "./i18n.ts";
import { FORM_OVERHEAD_BYTES, langOf } from "./payment-routes.ts";
import { tooLargePage } from "./render.ts";

/** A flexible link's amount form (`k` and an amount), posted by anyone who has the link's address. */
export const AMOUNT_FORM_LIMIT_BYTES = 4 * 1024;
/** Every other route (pages, state reads, assets, probes, unknown paths) takes no body worth the name. */
export const OTHER_BODY_LIMIT_BYTES = 16 * 1024;

/** Checkout's body limit per route (docs/operations.md lists the same table). */
export function checkoutBodyLimitRules(receiptMaxBytes: number): BodyLimitRule[] {
  return [
    { path: /^\/[^/]+\/receipt$/, maxBytes: receiptMaxBytes + FORM_OVERHEAD_BYTES },
    { path: /^\/[^/]+\/amount$/, maxBytes: AMOUNT_FORM_LIMIT_BYTES },
  ];
}

/**
 * Checkout's body limits: the shared middleware (`@gw/runtime`'s `bodyLimit`), before any
 * link is looked up. A receipt over the limit gets the page's own "too large" message
 * (JSON for the page's script), anything else the same page.
 */
export function checkoutBodyLimits(receiptMaxBytes: number) {
  return bodyLimit({
    routes: checkoutBodyLimitRules(receiptMaxBytes),
    otherwise: OTHER_BODY_LIMIT_BYTES,
    tooLarge: (c) => {
      const lang = langOf(c);
      if ((c.req.header("accept") ?? "").includes("application/json")) {
        const max = String(Math.max(1, Math.floor(receiptMaxBytes / (1024 * 1024))));
        return c.json({ error: true, message: fill(messages(lang).errTooLarge, { max }) }, 413);
      }
      return c.html(tooLargePage(lang, receiptMaxBytes), 413);
    },
  });
}
