import type { Hono } from "hono";
import { html } from "hono/html";
import { type BackofficeEnv, errorText, type PageKit, UUID } from "../page-kit.ts";
import { field, type Html, layout, postForm } from "../views.ts";

/** One operation of `GET /admin/v1/operations/search`. */
interface Found {
  shop_id: string;
  merchant_id: string;
  provider: string | null;
  operation: Record<string, string | undefined>;
  legs: {
    id: string;
    provider: string;
    provider_leg_id: string;
    amount: string;
    completed_at: string;
    receipt_id: string | null;
  }[];
  receipts: { id: string; amount: string; completed_at: string }[];
  provider_facts: {
    id: string;
    kind: string;
    provider: string;
    amount: string | null;
    currency: string | null;
    status: string;
  }[];
  webhook_deliveries: {
    event_id: string;
    event_type: string;
    status: string;
    attempts: number;
    last_status_code: number | null;
    last_error: string | null;
    created_at: string;
  }[];
}

const row = (label: string, value: string | null | undefined) =>
  value ? html`<div><dt>${label}</dt><dd>${value}</dd></div>` : "";

const table = (label: string, head: string[], rows: Html[], empty: string) =>
  rows.length === 0
    ? html`<p class="muted">${empty}</p>`
    : html`<table aria-label="${label}"><thead><tr>${head.map((c) => html`<th scope="col">${c}</th>`)}</tr></thead><tbody>${rows}</tbody></table>`;

function operationCard(f: Found, csrf: string): Html {
  const op = f.operation;
  const id = op.operation_id ?? "";
  return html`<section aria-labelledby="op-${id}"><h2 id="op-${id}">${op.type === "payout" ? "Payout" : "Payment"} <code>${id}</code> · ${op.status}</h2>
<div class="cols">
<dl>
${row("Merchant operation id", op.merchant_operation_id)}${row("Status", op.status)}${row("Method", op.method)}
${row("Expected amount", op.expected_amount ? `${op.expected_amount} ${op.currency ?? ""}` : undefined)}
${row("Actual amount", op.actual_amount ? `${op.actual_amount} ${op.currency ?? ""}` : undefined)}
${row("Provider", f.provider)}${row("Manual check", op.manual_check_reason)}${row("Expires", op.expires_at)}
${row("Created", op.created_at)}${row("Updated", op.updated_at)}
</dl>
<dl>
${html`<div><dt>Shop</dt><dd><a href="/backoffice/shops/${f.shop_id}">${f.shop_id}</a></dd></div>`}
${row("Merchant", f.merchant_id)}${row("Requisites", op.number ? `${op.number} ${op.name ?? ""}` : undefined)}
${row("Bank", op.bankname)}
</dl>
</div>
<h3>Legs</h3>
${table(
  `Legs of ${id}`,
  ["Provider", "Provider's id", "Amount", "Completed", "Receipt"],
  f.legs.map(
    (l) =>
      html`<tr><td>${l.provider}</td><td class="mono">${l.provider_leg_id}</td><td class="mono">${l.amount}</td><td>${l.completed_at}</td><td class="mono">${l.receipt_id ?? "—"}</td></tr>`,
  ),
  "No completed leg.",
)}
<h3>Receipts</h3>
${table(
  `Receipts of ${id}`,
  ["Receipt", "Amount", "Completed"],
  f.receipts.map(
    (r) =>
      html`<tr><td class="mono">${r.id}</td><td class="mono">${r.amount}</td><td>${r.completed_at}</td></tr>`,
  ),
  "No receipt.",
)}
<h3>Provider facts</h3>
${table(
  `Provider facts of ${id}`,
  ["Fact", "Kind", "Provider", "Amount", "Status"],
  f.provider_facts.map(
    (p) =>
      html`<tr><td class="mono">${p.id}</td><td>${p.kind}</td><td>${p.provider}</td><td class="mono">${p.amount ?? "unknown"} ${p.currency ?? ""}</td><td>${
        p.status === "open" ? html`<a href="/backoffice/provider-facts">open</a>` : p.status
      }</td></tr>`,
  ),
  "No provider fact.",
)}
<h3>Webhook deliveries</h3>
${table(
  `Webhook deliveries of ${id}`,
  ["Event", "Status", "Attempts", "Last answer", "Created", "Action"],
  f.webhook_deliveries.map(
    (d) =>
      html`<tr><td>${d.event_type}</td><td>${d.status}</td><td>${d.attempts}</td><td>${d.last_status_code ?? ""} ${d.last_error ?? ""}</td><td>${d.created_at}</td><td>${postForm(
        `/backoffice/shops/${f.shop_id}/deliveries/${d.event_id}/redeliver`,
        csrf,
        html`<button type="submit" class="secondary" aria-label="Redeliver ${d.event_type}">Redeliver</button>`,
      )}</td></tr>`,
  ),
  "No webhook delivery.",
)}
</section>`;
}

/**
 * Find an operation (`/backoffice/operations`): by its id or by the merchant's
 * `merchant_operation_id` in every shop, each with its legs, receipts, provider facts and
 * webhook deliveries.
 */
export function operationPages(app: Hono<BackofficeEnv>, kit: PageKit) {
  app.get("/operations", async (c) => {
    const c1 = kit.ctx(c, "operations");
    const q = (c.req.query("q") ?? "").trim();
    const form = html`<section aria-labelledby="find-op"><h2 id="find-op">Find an operation</h2>
<form method="get" action="/backoffice/operations" role="search">
${field("q", "Operation id or merchant operation id", { value: q, required: true })}
<button type="submit">Find</button>
</form></section>`;
    if (!q) return c.html(layout("Find an operation", c1, form));
    // A UUID is looked up as both: a merchant may use UUIDs as its own ids too.
    const asked = UUID.test(q)
      ? [`operation_id=${encodeURIComponent(q)}`, `merchant_operation_id=${encodeURIComponent(q)}`]
      : [`merchant_operation_id=${encodeURIComponent(q)}`];
    const found: Found[] = [];
    for (const query of asked) {
      const res = await kit.admin("GET", `/operations/search?${query}`);
      if (res.status >= 300)
        return c.html(layout("Find an operation", { ...c1, error: errorText(res) }, form));
      for (const f of (res.json?.operations ?? []) as Found[])
        if (!found.some((x) => x.operation.operation_id === f.operation.operation_id)) found.push(f);
    }
    const body = html`${form}
<p role="status">${found.length === 0 ? `No operation has the id “${q}”.` : `${found.length} found.`}</p>
${found.map((f) => operationCard(f, c1.csrf))}`;
    return c.html(layout("Find an operation", c1, body));
  });
}
