import type { Hono } from "hono";
import { html } from "hono/html";
import type { BackofficeEnv, PageKit } from "../page-kit.ts";
import { layout } from "../views.ts";

/** One payout as `GET /admin/v1/payouts/operator-queue` lists it. */
interface QueuedPayout {
  operation_id: string;
  shop_id: string;
  merchant_operation_id: string;
  amount: string;
  currency: string;
  created_at: string;
  operator_queued_at: string;
  unresolved_provider: string | null;
  passed_providers: string[];
  reconcile_checks: number;
  next_check_at: string | null;
  withdrawals: { provider: string; status: string; attempts: number; last_error: string | null }[];
}

const TITLE = "Payouts awaiting a decision";

/** What the operator does with a row: the provider's evidence decides, nothing here changes money. */
const HOW = html`<p>Each payout below was sent to a provider that has neither declined it nor confirmed a
withdrawal of its key for longer than the operator horizon (<code>PAYOUT_OPERATOR_HORIZON_MS</code>,
24 h by default). It may still pay it, so no other provider is asked; the merchant's create was
answered <code>503</code> and the shop's reserve stays held. The reconciler keeps asking. Ask the
provider for its own record of the payout (paid, or never paid and the key barred) and follow
docs/operations.md, "Payouts awaiting a decision". The operation's page shows its legs, provider
facts and webhooks.</p>`;

function payoutRow(p: QueuedPayout) {
  const withdrawals = p.withdrawals.map(
    (w) =>
      html`${w.provider}: ${w.status} (${w.attempts} asks${w.last_error ? html`, ${w.last_error}` : ""}) `,
  );
  return html`<tr>
<td><a href="/backoffice/operations?q=${p.operation_id}"><code>${p.operation_id}</code></a><br><span class="muted">${p.merchant_operation_id}</span></td>
<td><a href="/backoffice/shops/${p.shop_id}"><code>${p.shop_id}</code></a></td>
<td class="mono">${p.amount} ${p.currency}</td>
<td>${p.unresolved_provider ?? html`<span class="muted">none recorded</span>`}</td>
<td>${p.passed_providers.length > 0 ? p.passed_providers.join(", ") : html`<span class="muted">none</span>`}</td>
<td>${p.reconcile_checks}${p.next_check_at ? html`<br><span class="muted">next ${p.next_check_at}</span>` : ""}</td>
<td>${withdrawals.length > 0 ? withdrawals : html`<span class="muted">none recorded</span>`}</td>
<td>${p.created_at}</td>
<td>${p.operator_queued_at}</td>
</tr>`;
}

function queueTable(items: QueuedPayout[]) {
  return html`<section aria-labelledby="queue"><h2 id="queue">${items.length} waiting, oldest first</h2>
<table><thead><tr><th scope="col">Operation</th><th scope="col">Shop</th><th scope="col">Amount</th>
<th scope="col">Provider that may hold it</th><th scope="col">Said no before</th><th scope="col">Status asks</th>
<th scope="col">Withdrawal asks</th><th scope="col">Created</th><th scope="col">Queued</th></tr></thead>
<tbody>${items.map(payoutRow)}</tbody></table></section>`;
}

/**
 * The operator queue of payouts (`/backoffice/payouts/operator-queue`): a read-only list,
 * each row linking to the operation's page. Registered behind the session checks. Built
 * with hono/html.
 */
export function operatorQueuePages(app: Hono<BackofficeEnv>, kit: PageKit) {
  app.get("/payouts/operator-queue", async (c) => {
    const c1 = kit.ctx(c, "operator-queue");
    const res = await kit.admin("GET", "/payouts/operator-queue?limit=500");
    if (res.status >= 300)
      return c.html(layout(TITLE, { ...c1, error: `the request failed (${res.status})` }, html``));
    const items = (res.json?.payouts ?? []) as QueuedPayout[];
    const body = html`<section>${HOW}</section>${
      items.length === 0
        ? html`<section><p>No payout is waiting for a decision.</p></section>`
        : queueTable(items)
    }`;
    return c.html(layout(TITLE, c1, body));
  });
}
