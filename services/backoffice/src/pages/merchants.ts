import type { Hono } from "hono";
import { html } from "hono/html";
import { type BackofficeEnv, errorText, type PageKit, UUID, withMessage } from "../page-kit.ts";
import { field, layout, postForm } from "../views.ts";

/** One merchant of `GET /admin/v1/merchants`. */
interface MerchantItem {
  merchant_id: string;
  name: string;
  created_at: string;
  shops: { shop_id: string; name: string; created_at: string }[];
}

/** Merchants on one page of the list. */
export const MERCHANTS_PER_PAGE = 50;

/**
 * Merchants and shops (`/backoffice`): newest first, a page at a time (`cursor`), with a
 * search over merchant and shop names and ids (`q`); the forms for a new merchant and a
 * new shop (of a merchant on the page, or of the merchant whose id is searched).
 */
export function merchantPages(app: Hono<BackofficeEnv>, kit: PageKit) {
  app.get("/", async (c) => {
    const c1 = kit.ctx(c, "shops");
    const q = (c.req.query("q") ?? "").trim().slice(0, 200);
    const cursor = c.req.query("cursor");
    const params = new URLSearchParams({ limit: String(MERCHANTS_PER_PAGE) });
    if (q) params.set("q", q);
    if (cursor && UUID.test(cursor)) params.set("cursor", cursor);
    const res = await kit.admin("GET", `/merchants?${params}`);
    if (res.status >= 300)
      return c.html(layout("Merchants and shops", { ...c1, error: errorText(res) }, html``));
    const ms = (res.json?.merchants ?? []) as MerchantItem[];
    const next = res.json?.next_cursor as string | null;
    const nextLink = next
      ? `/backoffice?${new URLSearchParams({ ...(q ? { q } : {}), cursor: next })}`
      : undefined;
    const rows = ms.map(
      (m) =>
        html`<tr><td>${m.name}<br><code>${m.merchant_id}</code></td><td>${m.created_at}</td><td>${
          m.shops.length === 0
            ? html`<span class="muted">no shop yet</span>`
            : m.shops.map((s) => html`<a href="/backoffice/shops/${s.shop_id}">${s.name}</a><br>`)
        }</td></tr>`,
    );
    const body = html`<section aria-labelledby="find"><h2 id="find">Find</h2>
<form method="get" action="/backoffice" role="search">
${field("q", "Merchant or shop: name or id", { value: q })}
<button type="submit">Search</button>${q ? html` <a href="/backoffice">Show all</a>` : ""}
</form>
</section>
<div class="cols">
<section aria-labelledby="new-merchant"><h2 id="new-merchant">New merchant</h2>
${postForm("/backoffice/merchants", c1.csrf, html`${field("merchant_name", "Merchant name", { required: true })}<button type="submit">Create merchant</button>`)}
</section>
<section aria-labelledby="new-shop"><h2 id="new-shop">New shop</h2>
${
  ms.length === 0
    ? html`<p class="muted">Create a merchant first, or search for one.</p>`
    : postForm(
        "/backoffice/shops",
        c1.csrf,
        html`<label for="merchant_id">Merchant</label><select id="merchant_id" name="merchant_id">${ms.map(
          (m) => html`<option value="${m.merchant_id}">${m.name}</option>`,
        )}</select>${field("shop_name", "Shop name", { required: true })}<button type="submit">Create shop</button>`,
      )
}
</section>
</div>
<section aria-labelledby="list"><h2 id="list">Merchants${q ? html` matching “${q}”` : ""}, newest first</h2>
${
  ms.length === 0
    ? html`<p>${q ? "No merchant or shop matches." : "No merchant yet."}</p>`
    : html`<table><thead><tr><th scope="col">Merchant</th><th scope="col">Created</th><th scope="col">Shops</th></tr></thead><tbody>${rows}</tbody></table>`
}
<nav aria-label="Pages">${cursor ? html`<a href="/backoffice${q ? html`?q=${encodeURIComponent(q)}` : ""}">First page</a> ` : ""}${
      nextLink ? html`<a href="${nextLink}" rel="next">Older merchants</a>` : ""
    }</nav>
</section>`;
    return c.html(layout("Merchants and shops", c1, body));
  });

  app.post("/merchants", (c) =>
    kit.act(
      c,
      "/backoffice",
      kit.admin("POST", "/merchants", { name: c.get("form").merchant_name }),
      "Merchant created.",
    ),
  );

  app.post("/shops", async (c) => {
    const form = c.get("form");
    const res = await kit.admin("POST", "/shops", { merchant_id: form.merchant_id, name: form.shop_name });
    if (res.status >= 300) return c.redirect(withMessage("/backoffice", "error", errorText(res)), 303);
    return c.redirect(withMessage(`/backoffice/shops/${res.json.shop_id}`, "notice", "Shop created."), 303);
  });
}
