import type { Client } from "@connectrpc/connect";
import type { Database } from "@gw/db";
import { h, type Safe } from "@gw/html";
import type { Logger } from "@gw/log";
import { CURRENCIES, METHODS } from "@gw/money";
import type { ReceiptsService, Review } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { asc, eq } from "drizzle-orm";
import { type Context, Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { merchants, shops } from "../db/schema.ts";
import { secretsEqual } from "../keys.ts";
import { receiptFileHeaders } from "../routes/admin-receipt.ts";
import { providerFactPages } from "./provider-facts.ts";
import { LOGIN_COOKIE, loginNonce, SESSION_COOKIE, SESSION_TTL_MS, SessionKeys } from "./session.ts";
import {
  BACKOFFICE_CSS,
  BACKOFFICE_JS,
  field,
  layout,
  loginPage,
  type PageContext,
  postForm,
  select,
} from "./views.ts";

/**
 * The operators' back office at `/backoffice`: server-rendered pages over the edge's own
 * admin API (`/admin/v1`, called in process through `app.request()` with the admin
 * token, so every rule of the API holds here too), behind a login that exchanges the
 * admin token for a signed session cookie. Every POST carries the session's CSRF token
 * and must come from this origin; pages send a strict CSP and load nothing from outside.
 */

/** An answer of the admin API. */
export interface AdminAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the admin API's JSON, read field by field.
  json: any;
}

export interface BackofficeDeps {
  adminToken: string;
  db: Database;
  logger: Logger;
  /** Calls the edge's admin API in process. */
  admin(method: string, path: string, body?: unknown): Promise<AdminAnswer>;
  /** A GET of the admin API answered with a file (the receipt), in process; absent in some tests. */
  adminFile?(path: string): Promise<Response>;
  /** The receipts service, for what a receipt in manual check says; absent in some tests. */
  receipts?: Client<typeof ReceiptsService>;
}

export const BACKOFFICE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** The manual-check page embeds each receipt from `/backoffice/reviews/{id}/receipt`, and nothing else. */
export const REVIEWS_CSP = BACKOFFICE_CSP.replace(
  "connect-src 'self';",
  "connect-src 'self'; frame-src 'self';",
);

const METHOD_NAMES = Object.keys(METHODS);
const CURRENCY_NAMES = Object.keys(CURRENCIES);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Form = Record<string, string>;

/** Loopback hosts run locally over plain HTTP, where a Secure cookie would not be kept. */
const isLocal = (url: string) => /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(new URL(url).hostname);

const errorText = (a: AdminAnswer) =>
  (a.json?.error?.message as string | undefined) ?? `the request failed (${a.status})`;

/** A path with a one-line message for the next page. */
const withMessage = (path: string, kind: "notice" | "error", text: string) =>
  `${path}${path.includes("?") ? "&" : "?"}${kind}=${encodeURIComponent(text.slice(0, 300))}`;

/** The back office routes, mounted at `/backoffice`. */
export function backofficeRoutes(deps: BackofficeDeps) {
  const keys = new SessionKeys(deps.adminToken);
  const app = new Hono<{ Variables: { sid: string; form: Form; file?: boolean; frames?: boolean } }>();

  app.use(async (c, next) => {
    await next();
    // The receipt file sets its own headers: a sandbox, framed by this origin only.
    if (c.get("file")) return;
    c.header("Content-Security-Policy", c.get("frames") ? REVIEWS_CSP : BACKOFFICE_CSP);
    // Same-origin referrers only: browsers then send a real Origin on the forms' POSTs.
    c.header("Referrer-Policy", "same-origin");
    c.header("X-Frame-Options", "DENY");
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Cache-Control", "no-store");
  });

  app.get("/assets/backoffice.css", (c) =>
    c.body(BACKOFFICE_CSS, 200, { "content-type": "text/css; charset=utf-8" }),
  );
  app.get("/assets/backoffice.js", (c) =>
    c.body(BACKOFFICE_JS, 200, { "content-type": "text/javascript; charset=utf-8" }),
  );

  const cookieOptions = (c: Context, maxAgeS: number) =>
    ({
      httpOnly: true,
      sameSite: "Strict",
      secure: !isLocal(c.req.url),
      path: "/backoffice",
      maxAge: maxAgeS,
    }) as const;

  /** Every POST: same origin, a form body, and (after login) the session's CSRF token. */
  const readForm = async (c: Context): Promise<Form | undefined> => {
    // A form posted from another site is refused by its origin; an opaque origin ("null")
    // is left to the CSRF token, which another site cannot read.
    const origin = c.req.header("origin");
    if (origin && URL.canParse(origin) && new URL(origin).host !== c.req.header("host")) return undefined;
    const body = await c.req.parseBody();
    const form: Form = {};
    for (const [k, v] of Object.entries(body)) if (typeof v === "string") form[k] = v;
    return form;
  };

  const showLogin = (c: Context, error?: string, status = 200) => {
    const nonce = loginNonce();
    setCookie(c, LOGIN_COOKIE, nonce, cookieOptions(c, 1800));
    return c.html(loginPage(keys.csrf(`login.${nonce}`), error), status as 200);
  };

  app.get("/login", (c) => showLogin(c));
  app.post("/login", async (c) => {
    const form = await readForm(c);
    const nonce = getCookie(c, LOGIN_COOKIE);
    if (!form || !nonce || !keys.checkCsrf(`login.${nonce}`, form._csrf))
      return showLogin(c, "The form expired. Log in again.", 403);
    if (!form.token || !secretsEqual(form.token, deps.adminToken)) {
      deps.logger.warn("back office login refused");
      return showLogin(c, "That is not the admin token.", 401);
    }
    setCookie(c, SESSION_COOKIE, keys.issue(), cookieOptions(c, SESSION_TTL_MS / 1000));
    setCookie(c, LOGIN_COOKIE, "", cookieOptions(c, 0));
    deps.logger.info("back office login");
    return c.redirect("/backoffice", 303);
  });

  // Everything below needs a session; every POST also its CSRF token.
  app.use(async (c, next) => {
    const sid = keys.verify(getCookie(c, SESSION_COOKIE));
    if (!sid) {
      if (c.req.method === "GET") return c.redirect("/backoffice/login", 303);
      return c.text("not logged in", 401);
    }
    c.set("sid", sid);
    if (c.req.method === "POST") {
      const form = await readForm(c);
      if (!form || !keys.checkCsrf(sid, form._csrf)) return c.text("invalid or missing CSRF token", 403);
      c.set("form", form);
    }
    return next();
  });

  const ctx = (
    c: Context<{ Variables: { sid: string; form: Form; frames?: boolean } }>,
    current: PageContext["current"],
  ) => ({
    csrf: keys.csrf(c.get("sid")),
    current,
    notice: c.req.query("notice"),
    error: c.req.query("error"),
  });

  /** Runs an admin call for a form and goes back to `back` with its outcome. */
  const act = async (
    c: Context,
    back: string,
    call: Promise<AdminAnswer>,
    done: string,
  ): Promise<Response> => {
    const res = await call;
    if (res.status >= 300) return c.redirect(withMessage(back, "error", errorText(res)), 303);
    return c.redirect(withMessage(back, "notice", done), 303);
  };

  app.post("/logout", (c) => {
    setCookie(c, SESSION_COOKIE, "", cookieOptions(c, 0));
    return c.redirect("/backoffice/login", 303);
  });

  // Merchants and shops.
  app.get("/", async (c) => {
    const c1 = ctx(c, "shops");
    const [ms, ss] = await Promise.all([
      deps.db.select().from(merchants).orderBy(asc(merchants.createdAt)).limit(500),
      deps.db.select().from(shops).orderBy(asc(shops.createdAt)).limit(2000),
    ]);
    const rows = ms.map((m) => {
      const own = ss.filter((s) => s.merchantId === m.id);
      return h`<tr><td>${m.name}<br><code>${m.id}</code></td><td>${
        own.length === 0
          ? h`<span class="muted">no shop yet</span>`
          : own.map((s) => h`<a href="/backoffice/shops/${s.id}">${s.name}</a><br>`)
      }</td></tr>`;
    });
    const body = h`<div class="cols">
<section aria-labelledby="new-merchant"><h2 id="new-merchant">New merchant</h2>
${postForm("/backoffice/merchants", c1.csrf, h`${field("merchant_name", "Merchant name", { required: true })}<button type="submit">Create merchant</button>`)}
</section>
<section aria-labelledby="new-shop"><h2 id="new-shop">New shop</h2>
${
  ms.length === 0
    ? h`<p class="muted">Create a merchant first.</p>`
    : postForm(
        "/backoffice/shops",
        c1.csrf,
        h`<label for="merchant_id">Merchant</label><select id="merchant_id" name="merchant_id">${ms.map(
          (m) => h`<option value="${m.id}">${m.name}</option>`,
        )}</select>${field("shop_name", "Shop name", { required: true })}<button type="submit">Create shop</button>`,
      )
}
</section>
</div>
<section aria-labelledby="list"><h2 id="list">Merchants</h2>
<table><thead><tr><th scope="col">Merchant</th><th scope="col">Shops</th></tr></thead><tbody>${rows}</tbody></table>
</section>`;
    return c.html(layout("Merchants and shops", c1, body));
  });

  app.post("/merchants", (c) =>
    act(
      c,
      "/backoffice",
      deps.admin("POST", "/merchants", { name: c.get("form").merchant_name }),
      "Merchant created.",
    ),
  );

  app.post("/shops", async (c) => {
    const form = c.get("form");
    const res = await deps.admin("POST", "/shops", { merchant_id: form.merchant_id, name: form.shop_name });
    if (res.status >= 300) return c.redirect(withMessage("/backoffice", "error", errorText(res)), 303);
    return c.redirect(withMessage(`/backoffice/shops/${res.json.shop_id}`, "notice", "Shop created."), 303);
  });

  // One shop: keys, settings, routes, pricing, balances, webhook deliveries.
  const shopPage = async (
    c: Context<{ Variables: { sid: string; form: Form; frames?: boolean } }>,
    issued?: { what: "key" | "webhook"; value: string },
  ) => {
    const shopId = c.req.param("shop_id") ?? "";
    if (!UUID.test(shopId)) return c.notFound();
    const c1 = ctx(c, "shops");
    // One after another: an operator's page is not worth four pooled connections at once.
    const keysRes = await deps.admin("GET", `/shops/${shopId}/api-keys`);
    if (keysRes.status === 404) return c.notFound();
    const settingsRes = await deps.admin("GET", `/shops/${shopId}/settings`);
    const balancesRes = await deps.admin("GET", `/shops/${shopId}/balances`);
    const deliveriesRes = await deps.admin("GET", `/shops/${shopId}/webhooks/deliveries?limit=50`);
    const routesRes = await deps.admin("GET", `/shops/${shopId}/routes`);
    const pricingRes = await deps.admin("GET", `/shops/${shopId}/pricing`);
    const currentRoutes = (routesRes.json?.routes ?? []) as RouteItem[];
    const currentPricing = (pricingRes.json?.pricing ?? []) as PricingItem[];
    // The forms start from the first configured method's values.
    const route0 = currentRoutes[0];
    const pricing0 = currentPricing[0];
    const [shop] = await deps.db.select().from(shops).where(eqId(shopId)).limit(1);
    const base = `/backoffice/shops/${shopId}`;
    const settings = settingsRes.json ?? {};
    const keyRows = ((keysRes.json?.api_keys ?? []) as Record<string, string | null>[]).map(
      (k) =>
        h`<tr><td><code>${k.prefix}…</code></td><td>${k.created_at}</td><td>${k.revoked_at ?? "active"}</td><td>${
          k.revoked_at
            ? ""
            : postForm(
                `${base}/keys/${k.key_id}/revoke`,
                c1.csrf,
                h`<button type="submit" class="danger" aria-label="Revoke key ${k.prefix}">Revoke</button>`,
              )
        }</td></tr>`,
    );
    const balanceRows = ((balancesRes.json?.balances ?? []) as Record<string, string>[]).map(
      (b) =>
        h`<tr><td>${b.currency}</td><td class="mono">${b.balance}</td><td class="mono">${b.reserved}</td><td class="mono">${b.current_minus}</td></tr>`,
    );
    const deliveryRows = (
      (deliveriesRes.json?.deliveries ?? []) as Record<string, string | number | null>[]
    ).map(
      (d) =>
        h`<tr><td>${d.event_type}<br><code>${d.operation_id}</code></td><td>${d.status}</td><td>${d.attempts}</td><td>${
          d.last_status_code ?? ""
        } ${d.last_error ?? ""}</td><td>${d.created_at}</td><td>${postForm(
          `${base}/deliveries/${d.event_id}/redeliver`,
          c1.csrf,
          h`<button type="submit" class="secondary" aria-label="Redeliver ${d.event_type} of ${d.operation_id}">Redeliver</button>`,
        )}</td></tr>`,
    );
    const tierFields = (direction: "payin" | "payout") => {
      const t = pricing0?.[direction][0];
      return h`<fieldset><legend>${direction}</legend>
${field(`${direction}_min`, "Min amount", { value: t?.min_amount ?? "0.01" })}${field(`${direction}_max`, "Max amount", { value: t?.max_amount ?? "10000000.00" })}
${field(`${direction}_percent`, "Percent", { value: t?.percent ?? (direction === "payin" ? "2.5" : "1") })}${field(`${direction}_fixed`, "Fixed", { value: t?.fixed ?? "0" })}</fieldset>`;
    };
    const routeTable =
      routesRes.status >= 300
        ? h`<p class="alert">${errorText(routesRes)}</p>`
        : currentRoutes.length === 0
          ? h`<p class="muted">No route yet.</p>`
          : h`<table aria-label="Current routes"><thead><tr><th scope="col">Method</th><th scope="col">Payin</th><th scope="col">Payout</th><th scope="col">Settles in</th></tr></thead><tbody>${currentRoutes.map(
              (r) =>
                h`<tr><td>${r.method}</td><td>${r.payin.join(", ") || "—"}</td><td>${r.payout.join(", ") || "—"}</td><td>${r.settlement_currency}</td></tr>`,
            )}</tbody></table>`;
    const tierText = (tiers: PricingItem["payin"]) =>
      tiers.length === 0
        ? "—"
        : tiers.map((t) => h`${t.percent}% + ${t.fixed} (${t.min_amount}–${t.max_amount})<br>`);
    const pricingTable =
      pricingRes.status >= 300
        ? h`<p class="alert">${errorText(pricingRes)}</p>`
        : currentPricing.length === 0
          ? h`<p class="muted">No pricing yet.</p>`
          : h`<table aria-label="Current pricing"><thead><tr><th scope="col">Method</th><th scope="col">Payin</th><th scope="col">Payout</th></tr></thead><tbody>${currentPricing.map(
              (p) =>
                h`<tr><td>${p.method}</td><td class="mono">${tierText(p.payin)}</td><td class="mono">${tierText(p.payout)}</td></tr>`,
            )}</tbody></table>`;
    const body = h`${
      issued
        ? h`<div class="secret" role="status"><p><strong>${issued.what === "key" ? "New API key." : "Webhook signing secret."}</strong> Copy it now: it is shown only once${
            issued.what === "key" ? " and only its hash is kept" : ""
          }.</p>
<p><code id="new-${issued.what}">${issued.value}</code> <button type="button" data-copy="new-${issued.what}" hidden>Copy</button></p></div>`
        : ""
    }
<p class="muted">Shop <code>${shopId}</code>${shop ? h` · ${shop.name}` : ""} · <a href="/backoffice/reviews?shop_id=${shopId}">manual checks of this shop</a></p>
<section aria-labelledby="keys"><h2 id="keys">API keys</h2>
<table><thead><tr><th scope="col">Key</th><th scope="col">Issued</th><th scope="col">Revoked</th><th scope="col"><span class="muted">Action</span></th></tr></thead><tbody>${keyRows}</tbody></table>
${postForm(`${base}/keys`, c1.csrf, h`<button type="submit">Issue a new key</button>`)}
</section>
<div class="cols">
<section aria-labelledby="settings"><h2 id="settings">Settings</h2>
${postForm(
  `${base}/settings`,
  c1.csrf,
  h`<label class="inline"><input type="checkbox" name="hosted_page_enabled" value="on"${settings.hosted_page_enabled ? h` checked` : ""}> Hosted payment page</label>
<label class="inline"><input type="checkbox" name="flexible_link_enabled" value="on"${settings.flexible_link_enabled ? h` checked` : ""}> Flexible links</label>
${select("flexible_picker", "Flexible picker", ["amount", "ranges"], settings.flexible_picker)}
${field("webhook_url", "Webhook URL (left empty: unchanged)", { type: "url" })}
<button type="submit">Save settings</button>`,
)}
</section>
<section aria-labelledby="balances"><h2 id="balances">Balances</h2>
${
  balancesRes.status >= 300
    ? h`<p class="alert">${errorText(balancesRes)}</p>`
    : h`<table><thead><tr><th scope="col">Currency</th><th scope="col">Balance</th><th scope="col">Reserved</th><th scope="col">Current minus</th></tr></thead><tbody>${balanceRows}</tbody></table>`
}
</section>
<section aria-labelledby="routes"><h2 id="routes">Route</h2>
${routeTable}
${postForm(
  `${base}/routes`,
  c1.csrf,
  h`${select("route_method", "Method", METHOD_NAMES, route0?.method)}
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
  h`${select("pricing_method", "Method", METHOD_NAMES, pricing0?.method)}${tierFields("payin")}${tierFields("payout")}<button type="submit">Save pricing</button>`,
)}
</section>
</div>
<section aria-labelledby="deliveries"><h2 id="deliveries">Webhook deliveries</h2>
${
  deliveriesRes.status >= 300
    ? h`<p class="alert">${errorText(deliveriesRes)}</p>`
    : deliveryRows.length === 0
      ? h`<p class="muted">No delivery yet.</p>`
      : h`<table><thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Created</th><th scope="col"><span class="muted">Action</span></th></tr></thead><tbody>${deliveryRows}</tbody></table>`
}
</section>`;
    return c.html(layout(shop ? `Shop ${shop.name}` : "Shop", c1, body));
  };

  app.get("/shops/:shop_id", (c) => shopPage(c));

  app.post("/shops/:shop_id/keys", async (c) => {
    const res = await deps.admin("POST", `/shops/${c.req.param("shop_id")}/api-keys`);
    if (res.status >= 300)
      return c.redirect(
        withMessage(`/backoffice/shops/${c.req.param("shop_id")}`, "error", errorText(res)),
        303,
      );
    // The plaintext is rendered into this answer only (never a redirect URL, never logged).
    return shopPage(c, { what: "key", value: res.json.api_key as string });
  });

  app.post("/shops/:shop_id/keys/:key_id/revoke", (c) =>
    act(
      c,
      `/backoffice/shops/${c.req.param("shop_id")}`,
      deps.admin("POST", `/api-keys/${c.req.param("key_id")}/revoke`),
      "Key revoked.",
    ),
  );

  app.post("/shops/:shop_id/settings", async (c) => {
    const form = c.get("form");
    const back = `/backoffice/shops/${c.req.param("shop_id")}`;
    const res = await deps.admin("PUT", `/shops/${c.req.param("shop_id")}/settings`, {
      hosted_page_enabled: form.hosted_page_enabled === "on",
      flexible_link_enabled: form.flexible_link_enabled === "on",
      flexible_picker: form.flexible_picker,
      ...(form.webhook_url ? { webhook_url: form.webhook_url } : {}),
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
    return act(
      c,
      `/backoffice/shops/${c.req.param("shop_id")}`,
      deps.admin(
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
    return act(
      c,
      `/backoffice/shops/${c.req.param("shop_id")}`,
      deps.admin(
        "PUT",
        `/shops/${c.req.param("shop_id")}/pricing/${encodeURIComponent(form.pricing_method ?? "")}`,
        { payin: [tier("payin")], payout: [tier("payout")] },
      ),
      "Pricing saved.",
    );
  });

  app.post("/shops/:shop_id/deliveries/:event_id/redeliver", (c) =>
    act(
      c,
      `/backoffice/shops/${c.req.param("shop_id")}`,
      deps.admin(
        "POST",
        `/shops/${c.req.param("shop_id")}/webhooks/deliveries/${c.req.param("event_id")}/redeliver`,
      ),
      "Redelivery scheduled.",
    ),
  );

  // Providers and FX rates.
  app.get("/config", async (c) => {
    const c1 = ctx(c, "config");
    const providersRes = await deps.admin("GET", "/providers");
    const providers = (providersRes.json?.providers ?? []) as ProviderItem[];
    const body = h`<section aria-labelledby="providers"><h2 id="providers">Providers</h2>
${
  providersRes.status >= 300
    ? h`<p class="alert">${errorText(providersRes)}</p>`
    : providers.length === 0
      ? h`<p class="muted">No provider yet.</p>`
      : h`<table><thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Base URL</th><th scope="col">Methods</th><th scope="col">Updated</th></tr></thead><tbody>${providers.map(
          (p) =>
            h`<tr><td>${p.name}</td><td>${p.kind}</td><td class="mono">${p.base_url}</td><td>${p.methods.join(", ")}</td><td>${p.updated_at}</td></tr>`,
        )}</tbody></table>`
}
</section>
<div class="cols">
<section aria-labelledby="provider"><h2 id="provider">Provider</h2>
<p class="muted">Registers a provider or replaces its settings. Credentials are never shown again.</p>
${postForm(
  "/backoffice/providers",
  c1.csrf,
  h`${field("provider_name", "Name", { required: true })}${field("kind", "Connector kind", { value: "sandbox", required: true })}
${field("base_url", "Base URL", { type: "url", required: true })}${field("credentials", "Credentials", { type: "password", required: true })}
<fieldset><legend>Methods</legend>${METHOD_NAMES.map(
    (m) =>
      h`<label class="inline"><input type="checkbox" name="method_${m}" value="on" checked> ${m}</label>`,
  )}</fieldset>
<button type="submit">Save provider</button>`,
)}
</section>
<section aria-labelledby="fx"><h2 id="fx">FX rate</h2>
<p class="muted">Sets <em>to = from × rate</em>.</p>
${postForm(
  "/backoffice/fx",
  c1.csrf,
  h`${select("from", "From", CURRENCY_NAMES, "USDT")}${select("to", "To", CURRENCY_NAMES, "RUB")}
${field("rate", "Rate", { required: true, placeholder: "92.500000" })}${field("source", "Source", { required: true, value: "manual" })}
<button type="submit">Save rate</button>`,
)}
</section>
</div>`;
    return c.html(layout("Providers and FX rates", c1, body));
  });

  app.post("/providers", (c) => {
    const form = c.get("form");
    return act(
      c,
      "/backoffice/config",
      deps.admin("PUT", `/providers/${encodeURIComponent(form.provider_name ?? "")}`, {
        kind: form.kind,
        base_url: form.base_url,
        credentials: form.credentials,
        methods: METHOD_NAMES.filter((m) => form[`method_${m}`] === "on"),
      }),
      "Provider saved.",
    );
  });

  app.post("/fx", (c) => {
    const form = c.get("form");
    return act(
      c,
      "/backoffice/config",
      deps.admin(
        "PUT",
        `/fx/rates/${encodeURIComponent(form.from ?? "")}/${encodeURIComponent(form.to ?? "")}`,
        {
          rate: form.rate,
          source: form.source,
        },
      ),
      "FX rate saved.",
    );
  });

  // The manual-check queue: the receipt beside the requisites the payer was shown.
  app.get("/reviews", async (c) => {
    const c1 = ctx(c, "reviews");
    const shopId = c.req.query("shop_id");
    const res = await deps.admin(
      "GET",
      `/manual-checks?limit=50${shopId && UUID.test(shopId) ? `&shop_id=${shopId}` : ""}`,
    );
    if (res.status >= 300) return c.html(layout("Manual checks", { ...c1, error: errorText(res) }, h``));
    const items = (res.json?.items ?? []) as ManualCheckItem[];
    const reviews = await Promise.all(items.map((i) => reviewOf(deps, i)));
    const embed = deps.adminFile !== undefined;
    if (embed && items.some((i) => i.receipt_id)) c.set("frames", true);
    const cards = items.map((item, n) => reviewCard(item, reviews[n], c1.csrf, embed));
    return c.html(
      layout(
        "Manual checks",
        c1,
        items.length === 0 ? h`<section><p>No payment is waiting for a decision.</p></section>` : h`${cards}`,
      ),
    );
  });

  // The receipt itself, embedded in the review card: same origin, behind the session.
  app.get("/reviews/:operation_id/receipt", async (c) => {
    const id = c.req.param("operation_id");
    if (!UUID.test(id) || !deps.adminFile) return c.notFound();
    const res = await deps.adminFile(`/manual-checks/${id}/receipt`);
    if (res.status !== 200) {
      await res.body?.cancel();
      return c.text(
        res.status === 404 ? "This payment has no receipt." : "The receipt is unavailable.",
        res.status === 404 ? 404 : 503,
      );
    }
    const file = new Uint8Array(await res.arrayBuffer());
    const receiptId =
      /filename="receipt-([0-9a-f-]+)\.pdf"/.exec(res.headers.get("content-disposition") ?? "")?.[1] ?? id;
    c.set("file", true);
    return c.body(file, 200, {
      ...receiptFileHeaders(receiptId, file.length, "'self'"),
      "x-frame-options": "SAMEORIGIN",
    });
  });

  app.post("/reviews/:operation_id", (c) => {
    const form = c.get("form");
    return act(
      c,
      "/backoffice/reviews",
      deps.admin("POST", `/operations/${c.req.param("operation_id")}/review`, {
        decision: form.decision,
        ...(form.decision === "approve" ? { amount: form.amount } : {}),
        reason: form.reason,
        operator: form.operator,
      }),
      form.decision === "approve" ? "Payment approved." : "Payment rejected.",
    );
  });

  // Dead letters: events a consumer gave up on; the operator retries or discards each.
  app.get("/dead-letters", async (c) => {
    const c1 = ctx(c, "dead-letters");
    const all = c.req.query("all") === "1";
    const res = await deps.admin("GET", `/dead-letters${all ? "" : "?status=open"}`);
    if (res.status >= 300) return c.html(layout("Dead letters", { ...c1, error: errorText(res) }, h``));
    const items = (res.json?.dead_letters ?? []) as DeadLetterItem[];
    const toggle = all
      ? h`<p><a href="/backoffice/dead-letters">Show only the open ones</a></p>`
      : h`<p><a href="/backoffice/dead-letters?all=1">Show the retried and discarded ones too</a></p>`;
    return c.html(
      layout(
        "Dead letters",
        c1,
        h`${toggle}${
          items.length === 0
            ? h`<section><p>${all ? "No dead letters." : "No event is waiting for an operator."}</p></section>`
            : items.map((item) => deadLetterCard(item, c1.csrf))
        }`,
      ),
    );
  });

  app.post("/dead-letters/:service/:consumer/:event_id/:action{retry|discard}", (c) => {
    const form = c.get("form");
    const { service, consumer, event_id: eventId, action } = c.req.param();
    const path = `/dead-letters/${encodeURIComponent(service)}/${encodeURIComponent(consumer)}/${encodeURIComponent(eventId)}/${action}`;
    return act(
      c,
      "/backoffice/dead-letters",
      deps.admin(
        "POST",
        path,
        action === "retry" ? { operator: form.operator } : { operator: form.operator, reason: form.reason },
      ),
      action === "retry" ? "Event applied again." : "Dead letter discarded.",
    );
  });

  providerFactPages(app, { admin: deps.admin, ctx, act });
  app.notFound((c) => c.html(layout("Not found", undefined, h`<p>There is no such page.</p>`), 404));
  return app;
}

/** One item of the admin dead-letter list. */
interface DeadLetterItem {
  service: string;
  consumer: string;
  event_id: string;
  subject: string;
  attempts: number;
  error: string;
  first_failed_at: string;
  last_failed_at: string;
  status: string;
  resolved_at?: string;
  resolved_by?: string;
  resolution_reason?: string;
}

function deadLetterCard(item: DeadLetterItem, csrf: string): Safe {
  const key = `${item.service}/${item.consumer}/${item.event_id}`;
  const id = `${item.service}-${item.consumer}-${item.event_id}`;
  const row = (label: string, value: string | number | undefined) =>
    value === undefined || value === "" ? "" : h`<div><dt>${label}</dt><dd>${String(value)}</dd></div>`;
  return h`<section aria-labelledby="dl-${id}"><h2 id="dl-${id}">${item.subject} <small>(${item.status})</small></h2>
<dl>
${row("Service", item.service)}${row("Consumer", item.consumer)}${row("Event id", item.event_id)}
${row("Attempts", item.attempts)}${row("First failed", item.first_failed_at)}${row("Last failed", item.last_failed_at)}
${row("Resolved", item.resolved_at)}${row("By", item.resolved_by)}${row("Reason", item.resolution_reason)}
</dl>
<h3>Last error</h3><pre>${item.error}</pre>
${
  item.status === "open"
    ? h`<div class="cols">
${postForm(
  `/backoffice/dead-letters/${key}/retry`,
  csrf,
  h`<h3>Retry</h3><p>Applies the event again, once, with its consumer's handler. Fix the cause first.</p>
${field(`retry-operator-${id}`, "Operator", { name: "operator", required: true })}
<button type="submit">Retry</button>`,
)}
${postForm(
  `/backoffice/dead-letters/${key}/discard`,
  csrf,
  h`<h3>Discard</h3><p>Leaves the event unapplied for good.</p>
<label for="discard-reason-${id}">Reason</label><textarea id="discard-reason-${id}" name="reason" required></textarea>
${field(`discard-operator-${id}`, "Operator", { name: "operator", required: true })}
<button type="submit">Discard</button>`,
)}
</div>`
    : ""
}
</section>`;
}

const eqId = (id: string) => eq(shops.id, id);

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
interface ProviderItem {
  name: string;
  kind: string;
  base_url: string;
  methods: string[];
  updated_at: string;
}

/** One item of the admin manual-check queue. */
interface ManualCheckItem {
  shop_id: string;
  receipt_id: string | null;
  operation: Record<string, string | undefined>;
  findings: { check: string; outcome: string; detail: string }[];
}

/** What the receipt says, from the receipts service, when it can be asked. */
async function reviewOf(deps: BackofficeDeps, item: ManualCheckItem): Promise<Review | undefined> {
  if (!deps.receipts || !item.receipt_id) return undefined;
  try {
    const res = await deps.receipts.getReview(
      { shopId: item.shop_id, id: { case: "receiptId", value: item.receipt_id } },
      { timeoutMs: 2_000 },
    );
    return res.review;
  } catch (err) {
    deps.logger.warn({ err, operationId: item.operation.operation_id }, "receipt review unavailable");
    return undefined;
  }
}

function reviewCard(item: ManualCheckItem, review: Review | undefined, csrf: string, embed: boolean): Safe {
  const op = item.operation;
  const id = op.operation_id ?? "";
  const row = (label: string, value: string | undefined) =>
    value ? h`<div><dt>${label}</dt><dd>${value}</dd></div>` : "";
  return h`<section aria-labelledby="mc-${id}"><h2 id="mc-${id}">Payment <code>${id}</code></h2>
<div class="cols">
<div><h3>Requisites shown to the payer</h3><dl>
${row("Expected amount", `${op.expected_amount} ${op.currency}`)}${row("Method", op.method)}
${row("Number", op.number)}${row("Name", op.name)}${row("Bank", op.bankname_details ?? op.bankname)}
${row("Reason", op.manual_check_reason)}${row("Created", op.created_at)}${row("Shop", item.shop_id)}
</dl></div>
<div><h3>Receipt</h3><dl>
${row("Receipt", item.receipt_id ?? "none")}
${review ? h`${row("Amount on the receipt", review.actualAmount)}${row("Layout", review.layout)}${row("Transaction id", review.transactionId)}${row("Submitted", review.submittedAt)}${row("SHA-256", review.sha256)}` : ""}
</dl>
<h4>Findings</h4>
<ul>${item.findings.map((f) => h`<li><strong>${f.check}</strong> (${f.outcome}): ${f.detail}</li>`)}</ul>
</div>
</div>
${
  embed && item.receipt_id
    ? h`<h3>The receipt file</h3>
<iframe class="receipt" src="/backoffice/reviews/${id}/receipt" title="Receipt of payment ${id}"></iframe>
<p><a href="/backoffice/reviews/${id}/receipt" target="_blank" rel="noopener">Open the receipt in a new tab</a></p>`
    : ""
}
${postForm(
  `/backoffice/reviews/${id}`,
  csrf,
  h`<fieldset><legend>Decision</legend>
<label class="inline"><input type="radio" name="decision" value="approve" checked> Approve</label>
<label class="inline"><input type="radio" name="decision" value="reject"> Reject</label></fieldset>
${field(`amount-${id}`, "Amount that arrived (with approve)", { name: "amount", value: review?.actualAmount ?? op.expected_amount })}
<label for="reason-${id}">Reason</label><textarea id="reason-${id}" name="reason" required></textarea>
${field(`operator-${id}`, "Operator", { name: "operator", required: true })}
<button type="submit">Record decision</button>`,
)}
</section>`;
}

/** A file answer of the admin API (a GET), in process with the admin bearer token. */
export function inProcessAdminFile(
  app: { request(path: string, init: RequestInit): Response | Promise<Response> },
  adminToken: string,
): NonNullable<BackofficeDeps["adminFile"]> {
  return async (path) =>
    app.request(`/admin/v1${path}`, { method: "GET", headers: { authorization: `Bearer ${adminToken}` } });
}

/**
 * The back office's way into the admin API: a request to the edge app itself, in
 * process, with the admin bearer token, so validation, errors and audit logging are
 * exactly the API's.
 */
export function inProcessAdmin(
  app: { request(path: string, init: RequestInit): Response | Promise<Response> },
  adminToken: string,
): BackofficeDeps["admin"] {
  return async (method, path, body) => {
    const res = await app.request(`/admin/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${adminToken}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, json };
  };
}
