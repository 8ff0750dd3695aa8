import { CURRENCIES, METHODS } from "@gw/money";
import type { Hono } from "hono";
import { html } from "hono/html";
import { type BackofficeEnv, errorText, type PageKit } from "../page-kit.ts";
import { field, layout, postForm, select } from "../views.ts";

const METHOD_NAMES = Object.keys(METHODS);
const CURRENCY_NAMES = Object.keys(CURRENCIES);

interface ProviderItem {
  name: string;
  kind: string;
  base_url: string;
  methods: string[];
  updated_at: string;
}

/** Providers and FX rates. */
export function configPages(app: Hono<BackofficeEnv>, kit: PageKit) {
  app.get("/config", async (c) => {
    const c1 = kit.ctx(c, "config");
    const providersRes = await kit.admin("GET", "/providers");
    const providers = (providersRes.json?.providers ?? []) as ProviderItem[];
    const body = html`<section aria-labelledby="providers"><h2 id="providers">Providers</h2>
${
  providersRes.status >= 300
    ? html`<p class="alert">${errorText(providersRes)}</p>`
    : providers.length === 0
      ? html`<p class="muted">No provider yet.</p>`
      : html`<table><thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Base URL</th><th scope="col">Methods</th><th scope="col">Updated</th></tr></thead><tbody>${providers.map(
          (p) =>
            html`<tr><td>${p.name}</td><td>${p.kind}</td><td class="mono">${p.base_url}</td><td>${p.methods.join(", ")}</td><td>${p.updated_at}</td></tr>`,
        )}</tbody></table>`
}
</section>
<div class="cols">
<section aria-labelledby="provider"><h2 id="provider">Provider</h2>
<p class="muted">Registers a provider or replaces its settings. Credentials are never shown again.</p>
${postForm(
  "/backoffice/providers",
  c1.csrf,
  html`${field("provider_name", "Name", { required: true })}${field("kind", "Connector kind", { value: "sandbox", required: true })}
${field("base_url", "Base URL", { type: "url", required: true })}${field("credentials", "Credentials", { type: "password", required: true })}
<fieldset><legend>Methods</legend>${METHOD_NAMES.map(
    (m) =>
      html`<label class="inline"><input type="checkbox" name="method_${m}" value="on" checked> ${m}</label>`,
  )}</fieldset>
<button type="submit">Save provider</button>`,
)}
</section>
<section aria-labelledby="fx"><h2 id="fx">FX rate</h2>
<p class="muted">Sets <em>to = from × rate</em>.</p>
${postForm(
  "/backoffice/fx",
  c1.csrf,
  html`${select("from", "From", CURRENCY_NAMES, "USDT")}${select("to", "To", CURRENCY_NAMES, "RUB")}
${field("rate", "Rate", { required: true, placeholder: "92.500000" })}${field("source", "Source", { required: true, value: "manual" })}
<button type="submit">Save rate</button>`,
)}
</section>
</div>`;
    return c.html(layout("Providers and FX rates", c1, body));
  });

  app.post("/providers", (c) => {
    const form = c.get("form");
    return kit.act(
      c,
      "/backoffice/config",
      kit.admin("PUT", `/providers/${encodeURIComponent(form.provider_name ?? "")}`, {
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
    return kit.act(
      c,
      "/backoffice/config",
      kit.admin(
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
}
