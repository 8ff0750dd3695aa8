import type { PaymentPage } from "@gw/proto/gateway/operations/v1/operations_pb";
import { html } from "hono/html";
import { fill, type Lang, type Messages, messages } from "./i18n.ts";

/** What hono's `html` builds (a Promise only if a value put in is one: none here); `c.html` takes both. */
type Html = ReturnType<typeof html>;

/**
 * Server-side rendering of the payer's pages. Everything the payer needs is in the HTML
 * (amount, requisites, time left, steps, the upload form, the outcome); the script only
 * improves it. Text from downstream services passes through hono's `html`, which escapes it.
 */

/** Query string that keeps the page's `k` (flexible links) and sets the language. */
export const pageQuery = (lang: Lang, k?: string) => {
  const q = new URLSearchParams();
  if (k) q.set("k", k);
  q.set("lang", lang);
  return `?${q.toString()}`;
};

/** `1500.00` → `1 500,00 ₽` (ru) or `1,500.00 RUB` (en), without touching a float. */
export function formatMoney(amount: string, currency: string, lang: Lang): string {
  const negative = amount.startsWith("-");
  const [whole = "0", frac = ""] = amount.replace(/^-/, "").split(".");
  const sep = lang === "ru" ? "\u00a0" : ",";
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, sep);
  const body = frac ? `${grouped}${lang === "ru" ? "," : "."}${frac}` : grouped;
  const sign = negative ? "-" : "";
  if (lang === "ru" && currency === "RUB") return `${sign}${body}\u00a0₽`;
  return `${sign}${body}\u00a0${currency}`;
}

/** A card number in groups of four for reading; the copy button copies it whole. */
const readableNumber = (method: string, number: string) =>
  method === "WT_RUB_C2C" ? number.replace(/\s+/g, "").replace(/(\d{4})(?=\d)/g, "$1 ") : number;

/** `mm:ss` (or `h:mm:ss`) left until `expiresAt`, from the server's clock. */
export function timeLeft(expiresAt: string, now = Date.now()): string {
  const left = Math.max(0, Math.floor((Date.parse(expiresAt) - now) / 1000));
  const hours = Math.floor(left / 3600);
  const minutes = Math.floor((left % 3600) / 60);
  const seconds = String(left % 60).padStart(2, "0");
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
}

/** The document around a page: language, the one style sheet and script, the language switch. */
export function layout(options: {
  lang: Lang;
  title: string;
  body: Html;
  k?: string;
  /** While waiting, a page without the script reloads itself now and then. */
  refreshSeconds?: number;
}): Html {
  const m = messages(options.lang);
  const other: Lang = options.lang === "ru" ? "en" : "ru";
  return html`<!doctype html>
<html lang="${options.lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${options.title}</title>
<link rel="stylesheet" href="/assets/page.css">
<script src="/assets/page.js" defer></script>
${options.refreshSeconds ? html`<noscript><meta http-equiv="refresh" content="${options.refreshSeconds}"></noscript>` : ""}
</head>
<body>
<div class="wrap">
<header class="top">
<span class="brand">${m.title}</span>
<a href="${pageQuery(other, options.k)}" hreflang="${other}" lang="${other}">${m.language}</a>
</header>
${options.body}
</div>
</body>
</html>
`;
}

/** The one not-found page: the same for an unknown id, another state, a wrong `k`. */
export function notFoundPage(lang: Lang): Html {
  const m = messages(lang);
  return layout({
    lang,
    title: m.notFoundTitle,
    body: html`<main><div class="card"><h1>${m.notFoundTitle}</h1><p>${m.notFoundText}</p></div></main>`,
  });
}

/** The page of a request whose body is over the route's limit (a receipt over the maximum). */
export function tooLargePage(lang: Lang, maxBytes: number): Html {
  const m = messages(lang);
  const max = String(Math.max(1, Math.floor(maxBytes / (1024 * 1024))));
  return layout({
    lang,
    title: m.title,
    body: html`<main><div class="card"><h1>${m.title}</h1><p role="alert">${fill(m.errTooLarge, { max })}</p></div></main>`,
  });
}

/** A page for a dependency that did not answer: nothing about the payment is said. */
export function unavailablePage(lang: Lang): Html {
  const m = messages(lang);
  return layout({
    lang,
    title: m.title,
    body: html`<main><div class="card"><h1>${m.title}</h1><p role="alert">${m.errUnavailable}</p></div></main>`,
  });
}

const OUTCOME_ICON: Record<string, string> = { paid: "✓", under_review: "…", declined: "✕", expired: "⏱" };

function requisites(page: PaymentPage, m: Messages): Html {
  if (page.number === undefined) return html``;
  const row = (id: string, label: string, value: string, shown = value) =>
    html`<div><dt id="${id}-label">${label}</dt><dd id="${id}">${shown}</dd><button type="button" class="secondary" data-copy="${value}" aria-describedby="${id}-label" hidden>${m.copy}</button></div>`;
  return html`<section class="card" aria-labelledby="req-title">
<h2 id="req-title">${m.requisites}</h2>
<dl class="req">
${row("req-number", page.method === "WT_RUB_PHONE" ? m.phone : m.card, page.number, readableNumber(page.method, page.number))}
${page.name ? row("req-name", m.holder, page.name) : ""}
${page.banknameDetails || page.bankname ? row("req-bank", m.bank, page.banknameDetails ?? page.bankname ?? "") : ""}
</dl>
</section>`;
}

/** The upload form: works as a plain multipart form; the script adds checks and progress. */
function uploadForm(
  page: PaymentPage,
  m: Messages,
  lang: Lang,
  maxBytes: number,
  error?: string,
  k?: string,
): Html {
  const maxMb = String(Math.floor(maxBytes / (1024 * 1024)) || 1);
  return html`<section class="card" aria-labelledby="upload-title">
<h2 id="upload-title">${m.receiptTitle}</h2>
<form method="post" action="/${page.operationId}/receipt${pageQuery(lang, k)}" enctype="multipart/form-data" data-upload
 data-max-bytes="${String(maxBytes)}" data-msg-no-file="${m.errNoFile}" data-msg-empty="${m.errEmpty}"
 data-msg-not-pdf="${m.errNotPdf}" data-msg-too-large="${fill(m.errTooLarge, { max: maxMb })}"
 data-msg-network="${m.errNetwork}" data-msg-unavailable="${m.errUnavailable}"
 data-msg-uploading="${m.uploading}" data-msg-checking="${m.checking}">
<label for="receipt">${fill(m.receiptLabel, { max: maxMb })}</label>
<input type="file" id="receipt" name="receipt" accept="application/pdf,.pdf" required aria-describedby="receipt-hint upload-error"${error ? html` aria-invalid="true"` : ""}>
<p class="hint" id="receipt-hint">${m.receiptHint}</p>
<p class="alert" id="upload-error" role="alert"${error ? "" : html` hidden`}>${error ?? ""}</p>
<progress max="100" value="0" hidden aria-label="${m.uploading}"></progress>
<p id="upload-status" role="status" class="muted"></p>
<button type="submit">${m.upload}</button>
</form>
</section>`;
}

/** The payer's page of one payment: waiting (requisites, time, steps, upload) or an outcome. */
export function paymentPage(options: {
  page: PaymentPage;
  lang: Lang;
  maxBytes: number;
  error?: string;
  k?: string;
  notice?: string;
}): Html {
  const { page, lang } = options;
  const m = messages(lang);
  const waiting = page.outcome === "awaiting_payment" || page.outcome === "awaiting_receipt";
  const stateUrl = `/${page.operationId}/state${options.k ? `?k=${encodeURIComponent(options.k)}` : ""}`;
  const shop = page.shopDisplayName
    ? html`<p class="shop">${m.payingTo}: <strong id="shop-name">${page.shopDisplayName}</strong></p>`
    : "";
  const amount = html`<section class="card" aria-labelledby="amount-title">
${shop}<h1 id="amount-title">${m.amountToPay}</h1>
<p class="amount" id="amount">${formatMoney(page.amount, page.currency, lang)}</p>
${
  waiting && page.expiresAt
    ? html`<p data-expires="${page.expiresAt}">${m.timeLeft}: <span class="timer" role="timer" aria-live="off">${timeLeft(page.expiresAt)}</span></p>
<p class="alert" id="time-up" hidden>${m.timeUp}</p>`
    : ""
}
</section>`;

  let body: Html;
  if (waiting) {
    const steps = page.outcome === "awaiting_receipt" ? m.stepsReceipt : m.stepsProvider;
    body = html`${amount}
<div class="grid">
${requisites(page, m)}
<section class="card" aria-labelledby="steps-title">
<h2 id="steps-title">${m.stepsTitle}</h2>
<ol class="steps">${steps.map((s) => html`<li>${s}</li>`)}</ol>
${page.outcome === "awaiting_payment" ? html`<p class="muted" role="status">${m.waiting}</p>` : ""}
</section>
</div>
${page.outcome === "awaiting_receipt" ? uploadForm(page, m, lang, options.maxBytes, options.error, options.k) : ""}`;
  } else {
    const o = m.outcomes[page.outcome as keyof Messages["outcomes"]] ?? m.outcomes.declined;
    body = html`<section class="card outcome ${page.outcome}" aria-labelledby="outcome-title" role="status">
<p class="icon" aria-hidden="true">${OUTCOME_ICON[page.outcome] ?? "•"}</p>
<h1 id="outcome-title">${o.title}</h1>
<p>${o.text}</p>
<p class="muted">${m.amountToPay}: ${formatMoney(page.amount, page.currency, lang)}</p>
${page.paidAmount ? html`<p>${m.paidAmount}: <strong>${formatMoney(page.paidAmount, page.currency, lang)}</strong></p>` : ""}
</section>`;
  }
  return layout({
    lang,
    k: options.k,
    title: m.title,
    refreshSeconds: waiting || page.outcome === "under_review" ? 15 : undefined,
    body: html`<main data-page data-outcome="${page.outcome}" data-state-url="${page.outcome === "paid" || page.outcome === "declined" || page.outcome === "expired" ? "" : stateUrl}"
 data-msg-copy="${m.copy}" data-msg-copied="${m.copied}">
<div id="live" class="visually-hidden" aria-live="polite"></div>
${options.notice ? html`<p class="notice" role="status">${options.notice}</p>` : ""}
${waiting ? "" : shop}${body}
${returnLink(page, m)}
</main>`,
  });
}

/**
 * The way back to the shop (a shop setting, a spec extension): only an http(s) URL (the
 * operations service refuses anything else), opened without a referrer so the page's
 * address, which may carry the link's `k`, never reaches the shop.
 */
function returnLink(page: PaymentPage, m: Messages): Html | "" {
  const url = page.returnUrl;
  if (!url || !URL.canParse(url) || !["http:", "https:"].includes(new URL(url).protocol)) return "";
  return html`<p class="back"><a id="return-link" href="${url}" rel="noreferrer noopener">${m.backToShop} ${page.shopDisplayName ?? new URL(url).host}</a></p>`;
}

/** One range of amounts the payer can choose from, and the amount it offers. */
export interface PickerChoice {
  min: string;
  max: string;
  /** The amount of the range nearest to the recommended one. */
  offer: string;
}

const rangeText = (c: PickerChoice, currency: string, lang: Lang) =>
  c.min === c.max
    ? formatMoney(c.min, currency, lang)
    : `${formatMoney(c.min, currency, lang)} – ${formatMoney(c.max, currency, lang)}`;

/**
 * The amount picker of a flexible link: one amount field (with the available ranges as
 * a hint) or a list of ranges, as the shop is configured. It posts the choice with the
 * link's `k` in a hidden field.
 */
export function pickerPage(options: {
  operationId: string;
  k: string;
  lang: Lang;
  picker: string;
  currency: string;
  recommended: string;
  choices: PickerChoice[];
  value?: string;
  error?: string;
  notice?: string;
  expiresAt?: string;
}): Html {
  const { lang, currency, choices } = options;
  const m = messages(lang);
  const action = `/${options.operationId}/amount${pageQuery(lang)}`;
  const hint = choices.map((c) => rangeText(c, currency, lang)).join("; ");
  const form =
    choices.length === 0
      ? html`<p class="alert" role="alert">${m.pickNone}</p>`
      : html`<form method="post" action="${action}">
<input type="hidden" name="k" value="${options.k}">
${
  options.picker === "ranges"
    ? html`<fieldset><legend>${m.pickRangesLabel}</legend>${choices.map(
        (c, i) =>
          html`<label class="range" for="range-${String(i)}"><input type="radio" id="range-${String(i)}" name="amount" value="${c.offer}"${
            (options.value ?? choices[0]?.offer) === c.offer ? html` checked` : ""
          } required> <span><strong>${formatMoney(c.offer, currency, lang)}</strong>${
            c.min === c.max ? "" : html` <span class="muted">(${rangeText(c, currency, lang)})</span>`
          }</span></label>`,
      )}</fieldset>`
    : html`<label for="amount">${fill(m.pickAmountLabel, { currency })}</label>
<input type="text" id="amount" name="amount" inputmode="decimal" autocomplete="off" required value="${
        options.value ?? choices[0]?.offer ?? ""
      }" aria-describedby="amount-hint${options.error ? " pick-error" : ""}"${options.error ? html` aria-invalid="true"` : ""}>
<p class="hint" id="amount-hint">${fill(m.pickAmountHint, { ranges: hint })}</p>`
}
<button type="submit">${m.pickConfirm}</button>
</form>`;
  return layout({
    lang,
    k: options.k,
    title: m.pickTitle,
    body: html`<main data-page>
<div id="live" class="visually-hidden" aria-live="polite"></div>
<section class="card" aria-labelledby="pick-title">
<h1 id="pick-title">${m.pickTitle}</h1>
<p>${m.pickIntro}</p>
<p class="muted">${m.recommended}: ${formatMoney(options.recommended, currency, lang)}</p>
${
  options.expiresAt
    ? html`<p data-expires="${options.expiresAt}">${m.timeLeft}: <span class="timer" role="timer" aria-live="off">${timeLeft(options.expiresAt)}</span></p>`
    : ""
}
${options.notice ? html`<p class="notice" role="alert">${options.notice}</p>` : ""}
${options.error ? html`<p class="alert" id="pick-error" role="alert">${options.error}</p>` : ""}
${form}
</section>
</main>`,
  });
}

/** A flexible link whose lifetime passed: nothing was created. */
export function linkExpiredPage(lang: Lang, k?: string): Html {
  const m = messages(lang);
  return layout({
    lang,
    k,
    title: m.linkExpiredTitle,
    body: html`<main><section class="card outcome expired" role="status"><p class="icon" aria-hidden="true">⏱</p><h1>${m.linkExpiredTitle}</h1><p>${m.linkExpiredText}</p></section></main>`,
  });
}
