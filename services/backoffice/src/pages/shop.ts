import { CURRENCIES, METHODS } from "@gw/money";
import type { Hono } from "hono";
import { html } from "hono/html";
import {
  type BackofficeEnv,
  type BoContext,
  errorText,
  type PageKit,
  UUID,
  withMessage,
} from "../page-kit.ts";
import { field, layout, postForm, select } from "../views.ts";

const METHOD_NAMES = Object.keys(METHODS);
const CURRENCY_NAMES = Object.keys(CURRENCIES);

/** The admin API's reads of the configuration. */
interface RouteItem {
  method: string;
  payin: string[];
  payout: string[];
  settlement_currency: string;
}
interface PricingItem {
  method: string;
  payin: { min_amount: string; max_amount: string; percent: string; fixed: string }[];
  payout: { min_amount: string; max_amount: string; percent: string; fixed: string }[];
}

/** One shop: keys, settings, routes, pricing, balances, webhook deliveries. */
export function shopPages(app: Hono<BackofficeEnv>, kit: PageKit) {
  const shopPage = async (c: BoContext, issued?: { what: "key" | "webhook"; value: string }) => {
    const shopId = c.req.param("shop_id") ?? "";
    if (!UUID.test(shopId)) return c.notFound();
    const c1 = kit.ctx(c, "shops");
    // One after another: an operator's page is not worth four pooled connections at once.
    const shopRes = await kit.admin("GET", `/shops/${shopId}`);
    if (shopRes.status === 404) return c.notFound();
    const shop =
      shopRes.status === 200 ? (shopRes.json as { name: string; merchant_name: string }) : undefined;
    const keysRes = await kit.admin("GET", `/shops/${shopId}/api-keys`);
    const settingsRes = await kit.admin("GET", `/shops/${shopId}/settings`);
    const balancesRes = await kit.admin("GET", `/shops/${shopId}/balances`);
    const deliveriesRes = await kit.admin("GET", `/shops/${shopId}/webhooks/deliveries?limit=50`);
    const routesRes = await kit.admin("GET", `/shops/${shopId}/routes`);
    const pricingRes = await kit.admin("GET", `/shops/${shopId}/pricing`);
    const currentRoutes = (routesRes.json?.routes ?? []) as RouteItem[];
    const currentPricing = (pricingRes.json?.pricing ?? []) as PricingItem[];
    // The forms start from the first configured method's values.
    const route0 = currentRoutes[0];
    const pricing0 = currentPricing[0];
    const base = `/backoffice/shops/${shopId}`;
    const settings = settingsRes.json ?? {};
    const keyRows = ((keysRes.json?.api_keys ?? []) as Record<string, string | null>[]).map(
      (k) =>
        html`<tr><td><code>${k.prefix}…</code></td><td>${k.created_at}</td><td>${k.revoked_at ?? "active"}</td><td>${
          k.revoked_at
            ? ""
            : postForm(
                `${base}/keys/${k.key_id}/revoke`,
                c1.csrf,
                html`<button type="submit" class="danger" aria-label="Revoke key ${k.prefix}">Revoke</button>`,
              )
        }</td></tr>`,
    );
    const balanceRows = ((balancesRes.json?.balances ?? []) as Record<string, string>[]).map(
      (b) =>
        html`<tr><td>${b.currency}</td><td class="mono">${b.balance}</td><td class="mono">${b.reserved}</td><td class="mono">${b.current_minus}</td></tr>`,
    );
    const deliveryRows = (
      (deliveriesRes.json?.deliveries ?? []) as Record<string, string | number | null>[]
    ).map(
      (d) =>
        html`<tr><td>${d.event_type}<br><code>${d.operation_id}</code></td><td>${d.status}</td><td>${d.attempts}</td><td>${
          d.last_status_code ?? ""
        } ${d.last_error ?? ""}</td><td>${d.created_at}</td><td>${postForm(
          `${base}/deliveries/${d.event_id}/redeliver`,
          c1.csrf,
          html`<button type="submit" class="secondary" aria-label="Redeliver ${d.event_type} of ${d.operation_id}">Redeliver</button>`,
        )}</td></tr>`,
    );
    const tierFields = (direction: "payin" | "payout") => {
      const t = pricing0?.[direction][0];
      return html`<fieldset><legend>${direction}</legend>
${field(`${direction}_min`, "Min amount", { value: t?.min_amount ?? "0.01" })}${field(`${direction}_max`, "Max amount", { value: t?.max_amount ?? "10000000.00" })}
${field(`${direction}_percent`, "Percent", { value: t?.percent ?? (direction === "payin" ? "2.5" : "1") })}${field(`${direction}_fixed`, "Fixed", { value: t?.fixed ?? "0" })}</fieldset>`;
    };
    const routeTable =
      routesRes.status >= 300
        ? html`<p class="alert">${errorText(routesRes)}</p>`
        : currentRoutes.length === 0
          ? html`<p class="muted">No route yet.</p>`
          : html`<table aria-label="Current routes"><thead><tr><th scope="col">Method</th><th scope="col">Payin</th><th scope="col">Payout</th><th scope="col">Settles in</th></tr></thead><tbody>${currentRoutes.map(
              (r) =>
                html`<tr><td>${r.method}</td><td>${r.payin.join(", ") || "—"}</td><td>${r.payout.join(", ") || "—"}</td><td>${r.settlement_currency}</td></tr>`,
            )}</tbody></table>`;
    const tierText = (tiers: PricingItem["payin"]) =>
      tiers.length === 0
        ? "—"
        : tiers.map((t) => html`${t.percent}% + ${t.fixed} (${t.min_amount}–${t.max_amount})<br>`);
    const pricingTable =
      pricingRes.status >= 300
        ? html`<p class="alert">${errorText(pricingRes)}</p>`
        : currentPricing.length === 0
          ? html`<p class="muted">No pricing yet.</p>`
          : html`<table aria-label="Current pricing"><thead><tr><th scope="col">Method</th><th scope="col">Payin</th><th scope="col">Payout</th></tr></thead><tbody>${currentPricing.map(
              (p) =>
                html`<tr><td>${p.method}</td><td class="mono">${tierText(p.payin)}</td><td class="mono">${tierText(p.payout)}</td></tr>`,
            )}</tbody></table>`;
    const body = html`${
      issued
        ? html`<div class="secret" role="status"><p><strong>${issued.what === "key" ? "New API key." : "Webhook signing secret."}</strong> Copy it now: it is shown only once${
            issued.what === "key" ? " and only its hash is kept" : ""
          }.</p>
<p><code id="new-${issued.what}">${issued.value}</code> <button type="button" data-copy="new-${issued.what}" hidden>Copy</button></p></div>`
        : ""
    }
<p class="muted">Shop <code>${shopId}</code>${shop ? html` · ${shop.name} · merchant ${shop.merchant_name}` : ""} · <a href="/backoffice/reviews?shop_id=${shopId}">manual checks of this shop</a></p>
<section aria-labelledby="keys"><h2 id="keys">API keys</h2>
<table><thead><tr><th scope="col">Key</th><th scope="col">Issued</th><th scope="col">Revoked</th><th scope="col"><span class="muted">Action</span></th></tr></thead><tbody>${keyRows}</tbody></table>
${postForm(`${base}/keys`, c1.csrf, html`<button type="submit">Issue a new key</button>`)}
</section>
<div class="cols">
<section aria-labelledby="settings"><h2 id="settings">Settings</h2>
${postForm(
  `${base}/settings`,
  c1.csrf,
  html`<label class="inline"><input type="checkbox" name="hosted_page_enabled" value="on"${settings.hosted_page_enabled ? html` checked` : ""}> Hosted payment page</label>
<label class="inline"><input type="checkbox" name="flexible_link_enabled" value="on"${settings.flexible_link_enabled ? html` checked` : ""}> Flexible links</label>
${select("flexible_picker", "Flexible picker", ["amount", "ranges"], settings.flexible_picker)}
${field("webhook_url", "Webhook URL", { type: "url", value: settings.webhook_url })}
${field("display_name", "Name shown to payers", { value: settings.display_name })}
${field("return_url", "Return link on the payer's page", { type: "url", value: settings.return_url })}
<button type="submit">Save settings</button>`,
)}
</section>
<section aria-labelledby="balances"><h2 id="balances">Balances</h2>
${
  balancesRes.status >= 300
    ? html`<p class="alert">${errorText(balancesRes)}</p>`
    : html`<table><thead><tr><th scope="col">Currency</th><th scope="col">Balance</th><th scope="col">Reserved</th><th scope="col">Current minus</th></tr></thead><tbody>${balanceRows}</tbody></table>`
}
</section>
<section aria-labelledby="routes"><h2 id="routes">Route</h2>
${routeTable}
${postForm(
  `${base}/routes`,
  c1.csrf,
  html`${select("route_method", "Method", METHOD_NAMES, route0?.method)}
${field("payin", "Payin providers, in order (comma-separated)", { placeholder: "sandbox, self_matching", value: route0?.payin.join(", ") })}
${field("payout", "Payout providers, in order (comma-separated)", { value: route0?.payout.join(", ") })}
${select("settlement_currency", "Settlement currency", CURRENCY_NAMES, route0?.settlement_currency ?? "RUB")}
<button type="submit">Save route</button>`,
)}
</section>
<section aria-labelledby="pricing"><h2 id="pricing">Pricing</h2>
${pricingTable}
${postForm(
  `${base}/pricing`,
  c1.csrf,
  html`${select("pricing_method", "Method", METHOD_NAMES, pricing0?.method)}${tierFields("payin")}${tierFields("payout")}<button type="submit">Save pricing</button>`,
)}
</section>
</div>
<section aria-labelledby="deliveries"><h2 id="deliveries">Webhook deliveries</h2>
${
  deliveriesRes.status >= 300
    ? html`<p class="alert">${errorText(deliveriesRes)}</p>`
    : deliveryRows.length === 0
      ? html`<p class="muted">No delivery yet.</p>`
      : html`<table><thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Created</th><th scope="col"><span class="muted">Action</span></th></tr></thead><tbody>${deliveryRows}</tbody></table>`
}
</section>`;
    return c.html(layout(shop ? `Shop ${shop.name}` : "Shop", c1, body));
  };

  app.get("/shops/:shop_id", (c) => shopPage(c));

  app.post("/shops/:shop_id/keys", async (c) => {
    const res = await kit.admin("POST", `/shops/${c.req.param("shop_id")}/api-keys`);
    if (res.status >= 300)
      return c.redirect(
        withMessage(`/backoffice/shops/${c.req.param("shop_id")}`, "error", errorText(res)),
        303,
      );
    // The plaintext is rendered into this answer only (never a redirect URL, never logged).
    return shopPage(c, { what: "key", value: res.json.api_key as string });
  });

  app.post("/shops/:shop_id/keys/:key_id/revoke", (c) =>
    kit.act(
      c,
      `/backoffice/shops/${c.req.param("shop_id")}`,
      kit.admin("POST", `/api-keys/${c.req.param("key_id")}/revoke`),
      "Key revoked.",
    ),
  );

  app.post("/shops/:shop_id/settings", async (c) => {
    const form = c.get("form");
    const back = `/backoffice/shops/${c.req.param("shop_id")}`;
    const res = await kit.admin("PUT", `/shops/${c.req.param("shop_id")}/settings`, {
      hosted_page_enabled: form.hosted_page_enabled === "on",
      flexible_link_enabled: form.flexible_link_enabled === "on",
      flexible_picker: form.flexible_picker,
      ...(form.webhook_url ? { webhook_url: form.webhook_url } : {}),
      display_name: form.display_name ?? "",
      return_url: form.return_url ?? "",
    });
    if (res.status >= 300) return c.redirect(withMessage(back, "error", errorText(res)), 303);
    // A shop's first webhook URL comes with its signing secret: shown here, once.
    if (typeof res.json?.webhook_secret === "string")
      return shopPage(c, { what: "webhook", value: res.json.webhook_secret });
    return c.redirect(withMessage(back, "notice", "Settings saved."), 303);
  });

  const list = (text: string | undefined) =>
    (text ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);

  app.post("/shops/:shop_id/routes", (c) => {
    const form = c.get("form");
    return kit.act(
      c,
      `/backoffice/shops/${c.req.param("shop_id")}`,
      kit.admin(
        "PUT",
        `/shops/${c.req.param("shop_id")}/routes/${encodeURIComponent(form.route_method ?? "")}`,
        {
          payin: list(form.payin),
          payout: list(form.payout),
          settlement_currency: form.settlement_currency,
        },
      ),
      "Route saved.",
    );
  });

  app.post("/shops/:shop_id/pricing", (c) => {
    const form = c.get("form");
    const tier = (d: string) => ({
      min_amount: form[`${d}_min`],
      max_amount: form[`${d}_max`],
      percent: form[`${d}_percent`],
      fixed: form[`${d}_fixed`],
    });
    return kit.act(
      c,
      `/backoffice/shops/${c.req.param("shop_id")}`,
      kit.admin(
        "PUT",
        `/shops/${c.req.param("shop_id")}/pricing/${encodeURIComponent(form.pricing_method ?? "")}`,
        { payin: [tier("payin")], payout: [tier("payout")] },
      ),
      "Pricing saved.",
    );
  });

  app.post("/shops/:shop_id/deliveries/:event_id/redeliver", (c) =>
    kit.act(
      c,
      `/backoffice/shops/${c.req.param("shop_id")}`,
      kit.admin(
        "POST",
        `/shops/${c.req.param("shop_id")}/webhooks/deliveries/${c.req.param("event_id")}/redeliver`,
      ),
      "Redelivery scheduled.",
    ),
  );
}
