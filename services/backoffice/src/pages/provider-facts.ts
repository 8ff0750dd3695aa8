import type { Hono } from "hono";
import { html } from "hono/html";
import { type BackofficeEnv, type PageKit, UUID } from "../page-kit.ts";
import { field, type Html, layout, postForm } from "../views.ts";

/** One provider fact as `GET /admin/v1/provider-facts` lists it. */
interface FactItem {
  id: string;
  operation_id: string | null;
  shop_id: string | null;
  provider: string;
  kind: string;
  provider_status: string;
  direction: "payin" | "payout";
  amount: string | null;
  currency: string | null;
  status: "open" | "resolved";
  resolution: null | { action: string; reason: string; resolved_at: string };
  created_at: string;
}

const KIND_TEXT: Record<string, string> = {
  late_completion: "completed after the gateway cancelled, rejected or expired it",
  not_routed: "completed by a provider that does not hold the route",
  slot_refused: "a pool payment its payout could no longer take",
  amount_mismatch: "an amount that does not fit the operation",
};

/** The notice after each resolution. */
const DONE_TEXT: Record<string, string> = {
  credit_shop: "Credited to the shop.",
  return_to_payer: "Returned to the payer.",
  debit_shop: "Charged to the shop.",
  write_off: "Written off as the gateway's loss.",
};

function factCard(f: FactItem, csrf: string): Html {
  const row = (label: string, value: string | null) =>
    html`<tr><th scope="row">${label}</th><td>${value ?? html`<span class="muted">unknown</span>`}</td></tr>`;
  return html`<section aria-labelledby="fact-${f.id}"><h2 id="fact-${f.id}">${f.amount ?? "Amount unknown"} ${f.currency ?? "(currency unknown)"} · ${f.provider}</h2>
<p>${KIND_TEXT[f.kind] ?? f.kind}; money that ${f.direction === "payout" ? "went out" : "came in"}. Booked on the suspense account until resolved; the operation keeps its status.</p>
<table><tbody>
${row("Fact", f.id)}${row("Operation", f.operation_id)}${row("Shop", f.shop_id)}
${row("Provider reported", f.provider_status)}${row("Recorded", f.created_at)}
</tbody></table>
${
  f.status === "resolved" && f.resolution
    ? html`<p class="notice">Resolved: ${f.resolution.action} at ${f.resolution.resolved_at} (${f.resolution.reason}).</p>`
    : postForm(
        `/backoffice/provider-facts/${f.id}`,
        csrf,
        html`<fieldset><legend>Resolution</legend>
${
  f.direction === "payout"
    ? html`<label class="inline"><input type="radio" name="action" value="debit_shop" checked> Charge the shop (plus payout commission)</label>
<label class="inline"><input type="radio" name="action" value="write_off"> Write off as the gateway's loss</label>`
    : html`<label class="inline"><input type="radio" name="action" value="credit_shop" checked> Credit the shop (less commission)</label>
<label class="inline"><input type="radio" name="action" value="return_to_payer"> Return to the payer</label>`
}</fieldset>
<label for="reason-${f.id}">Reason</label><textarea id="reason-${f.id}" name="reason" required></textarea>
${field(`operator-${f.id}`, "Operator", { name: "operator", required: true })}
<button type="submit">Resolve</button>`,
      )
}
</section>`;
}

/**
 * The provider facts page of the back office (`/backoffice/provider-facts`): the open
 * facts first, each with its resolve form, then the resolved ones. Registered on the back
 * office app behind its session and CSRF checks.
 */
export function providerFactPages(app: Hono<BackofficeEnv>, deps: PageKit) {
  app.get("/provider-facts", async (c) => {
    const c1 = deps.ctx(c, "facts");
    const res = await deps.admin("GET", "/provider-facts?limit=200");
    if (res.status >= 300)
      return c.html(layout("Provider facts", { ...c1, error: `the request failed (${res.status})` }, html``));
    const items = (res.json?.provider_facts ?? []) as FactItem[];
    return c.html(
      layout(
        "Provider facts",
        c1,
        items.length === 0
          ? html`<section><p>No money moved that the gateway did not expect.</p></section>`
          : html`${items.map((f) => factCard(f, c1.csrf))}`,
      ),
    );
  });

  app.post("/provider-facts/:id", (c) => {
    const id = c.req.param("id");
    if (!UUID.test(id)) return c.notFound();
    const form = c.get("form");
    return deps.act(
      c,
      "/backoffice/provider-facts",
      deps.admin("POST", `/provider-facts/${id}/resolve`, {
        action: form.action,
        reason: form.reason,
        operator: form.operator,
      }),
      DONE_TEXT[form.action ?? ""] ?? "Resolved.",
    );
  });
}
