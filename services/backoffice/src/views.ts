import { html } from "hono/html";

/** What hono's `html` builds (a Promise only if a value put in is one: none here); `c.html` takes both. */
export type Html = ReturnType<typeof html>;

/**
 * The back office's pages, rendered on the server. Every form posts to the back office
 * with the session's CSRF token; the one script (`/backoffice/assets/backoffice.js`)
 * only adds copy buttons.
 */

export const BACKOFFICE_CSS = `
*,*::before,*::after{box-sizing:border-box}
html{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;font-size:16px;line-height:1.45;color:#1b1b1f;background:#f2f3f5}
body{margin:0}
a{color:#0b57d0}
header.bar{background:#1d2733;color:#fff;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.4rem 1.2rem;align-items:center}
header.bar nav{display:flex;flex-wrap:wrap;gap:.4rem 1.2rem}
header.bar a{color:#fff;text-decoration:none;padding:.35rem 0;font-weight:600}
header.bar a[aria-current=page]{text-decoration:underline}
header.bar .session{margin-left:auto;display:flex;gap:.5rem;flex-wrap:wrap}
header.bar button{background:transparent;border-color:#fff;color:#fff;margin:0}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.45rem;margin:.3rem 0 1rem}
h2{font-size:1.15rem;margin:0 0 .7rem}
section{background:#fff;border-radius:10px;padding:1rem;margin-bottom:1rem;box-shadow:0 1px 3px rgba(0,0,0,.12);overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.95rem}
th,td{text-align:left;padding:.45rem .5rem;border-bottom:1px solid #e3e4e8;vertical-align:top}
th{color:#3d4048;font-weight:600}
code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.92rem;word-break:break-all}
label{display:block;font-weight:600;margin:.5rem 0 .25rem}
label.inline{display:inline-flex;gap:.4rem;align-items:center;font-weight:500;margin-right:1rem}
input[type=text],input[type=password],input[type=url],select,textarea{font:inherit;width:100%;max-width:32rem;padding:.45rem;border:2px solid #6b6f78;border-radius:6px;background:#fff;min-height:40px}
textarea{min-height:4rem}
button{font:inherit;border-radius:6px;border:2px solid #0b57d0;background:#0b57d0;color:#fff;padding:.4rem .9rem;cursor:pointer;min-height:40px;margin-top:.5rem}
button.secondary{background:#fff;color:#0b57d0}
button.danger{background:#b3261e;border-color:#b3261e}
:focus-visible{outline:3px solid #e8710a;outline-offset:2px}
.notice{border-left:5px solid #146c2e;background:#e6f4ea;color:#0d3d1b;padding:.75rem;border-radius:6px;margin-bottom:1rem}
.alert{border-left:5px solid #b3261e;background:#fdecea;color:#5f1412;padding:.75rem;border-radius:6px;margin-bottom:1rem}
.secret{border:2px dashed #8a5a00;background:#fff8e1;padding:.75rem;border-radius:6px;margin-bottom:1rem}
.cols{display:grid;grid-template-columns:1fr;gap:1rem}
.muted{color:#4a4d55}
dl{margin:0}
dl div{display:flex;gap:.5rem;padding:.25rem 0;border-bottom:1px solid #eee}
dt{min-width:9rem;color:#3d4048}
dd{margin:0;font-weight:600;word-break:break-all}
iframe.receipt{display:block;width:100%;height:36rem;border:1px solid #c9cbd1;border-radius:6px;background:#fff}
fieldset{border:1px solid #c9cbd1;border-radius:6px;margin:.5rem 0;padding:.5rem .8rem}
@media (min-width:800px){.cols{grid-template-columns:1fr 1fr}.cols3{grid-template-columns:1fr 1fr 1fr}}
`;

export const BACKOFFICE_JS = `"use strict";
document.querySelectorAll("button[data-copy]").forEach(function (b) {
  b.hidden = false;
  b.addEventListener("click", function () {
    var target = document.getElementById(b.getAttribute("data-copy"));
    if (!target || !navigator.clipboard) return;
    navigator.clipboard.writeText(target.textContent.trim()).then(function () {
      b.textContent = "Copied";
      setTimeout(function () { b.textContent = "Copy"; }, 2000);
    }, function () {});
  });
});
`;

/** What every page of a logged-in operator needs. */
export interface PageContext {
  csrf: string;
  current: "shops" | "operations" | "reviews" | "config" | "dead-letters" | "facts" | "operator-queue";
  notice?: string;
  error?: string;
}

/** A hidden CSRF field for a form. */
export const csrfField = (csrf: string) => html`<input type="hidden" name="_csrf" value="${csrf}">`;

/** A POST form with the CSRF field. */
export const postForm = (action: string, csrf: string, body: Html | Html[], attrs = "") =>
  html`<form method="post" action="${action}"${attrs ? html` ${attrs}` : ""}>${csrfField(csrf)}${body}</form>`;

/** The document of a back office page. */
export function layout(title: string, ctx: PageContext | undefined, body: Html): Html {
  const nav = ctx
    ? html`<header class="bar"><nav aria-label="Back office">
<a href="/backoffice"${ctx.current === "shops" ? html` aria-current="page"` : ""}>Merchants and shops</a>
<a href="/backoffice/operations"${ctx.current === "operations" ? html` aria-current="page"` : ""}>Find an operation</a>
<a href="/backoffice/reviews"${ctx.current === "reviews" ? html` aria-current="page"` : ""}>Manual checks</a>
<a href="/backoffice/provider-facts"${ctx.current === "facts" ? html` aria-current="page"` : ""}>Provider facts</a>
<a href="/backoffice/payouts/operator-queue"${ctx.current === "operator-queue" ? html` aria-current="page"` : ""}>Payouts awaiting a decision</a>
<a href="/backoffice/config"${ctx.current === "config" ? html` aria-current="page"` : ""}>Providers and FX rates</a>
<a href="/backoffice/dead-letters"${ctx.current === "dead-letters" ? html` aria-current="page"` : ""}>Dead letters</a>
</nav>
<div class="session">${postForm("/backoffice/logout", ctx.csrf, html`<button type="submit" class="secondary">Log out</button>`)}
${postForm("/backoffice/sessions/end-all", ctx.csrf, html`<button type="submit" class="secondary" title="Logs every operator out, you too">End all sessions</button>`)}</div>
</header>`
    : html`<header class="bar"><span>Gateway back office</span></header>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Back office</title>
<link rel="stylesheet" href="/backoffice/assets/backoffice.css">
<script src="/backoffice/assets/backoffice.js" defer></script>
</head>
<body>
${nav}
<main>
<h1>${title}</h1>
${ctx?.notice ? html`<p class="notice" role="status">${ctx.notice}</p>` : ""}
${ctx?.error ? html`<p class="alert" role="alert">${ctx.error}</p>` : ""}
${body}
</main>
</body>
</html>
`;
}

/** The login form: the admin token once, exchanged for a session cookie. */
export function loginPage(csrf: string, error?: string): Html {
  return layout(
    "Log in",
    undefined,
    html`${error ? html`<p class="alert" role="alert">${error}</p>` : ""}
<section>
${postForm(
  "/backoffice/login",
  csrf,
  html`<label for="token">Admin token</label>
<input type="password" id="token" name="token" autocomplete="current-password" required>
<button type="submit">Log in</button>`,
)}
</section>`,
  );
}

/** A field with its label. */
export const field = (
  id: string,
  label: string,
  options: { type?: string; value?: string; required?: boolean; placeholder?: string; name?: string } = {},
) =>
  html`<label for="${id}">${label}</label><input type="${options.type ?? "text"}" id="${id}" name="${options.name ?? id}"${
    options.value !== undefined ? html` value="${options.value}"` : ""
  }${options.placeholder ? html` placeholder="${options.placeholder}"` : ""}${options.required ? html` required` : ""}>`;

/** A select with its label. */
export const select = (id: string, label: string, values: readonly string[], selected?: string) =>
  html`<label for="${id}">${label}</label><select id="${id}" name="${id}">${values.map(
    (v) => html`<option value="${v}"${v === selected ? html` selected` : ""}>${v}</option>`,
  )}</select>`;
