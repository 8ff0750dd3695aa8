import type { Hono } from "hono";
import { html } from "hono/html";
import type { AdminClient } from "../admin-client.ts";
import { type BackofficeEnv, errorText, type PageKit, UUID } from "../page-kit.ts";
import { field, type Html, layout, postForm } from "../views.ts";

/** The manual-check queue: the receipt beside the requisites the payer was shown. */
export function reviewPages(app: Hono<BackofficeEnv>, kit: PageKit, admin: AdminClient) {
  app.get("/reviews", async (c) => {
    const c1 = kit.ctx(c, "reviews");
    const shopId = c.req.query("shop_id");
    const res = await kit.admin(
      "GET",
      `/manual-checks?limit=50${shopId && UUID.test(shopId) ? `&shop_id=${shopId}` : ""}`,
    );
    if (res.status >= 300) return c.html(layout("Manual checks", { ...c1, error: errorText(res) }, html``));
    const items = (res.json?.items ?? []) as ManualCheckItem[];
    if (items.some((i) => i.receipt_id)) c.set("frames", true);
    const cards = items.map((item) => reviewCard(item, c1.csrf));
    return c.html(
      layout(
        "Manual checks",
        c1,
        items.length === 0
          ? html`<section><p>No payment is waiting for a decision.</p></section>`
          : html`${cards}`,
      ),
    );
  });

  // The receipt itself, embedded in the review card: same origin, behind the session.
  app.get("/reviews/:operation_id/receipt", async (c) => {
    const id = c.req.param("operation_id");
    if (!UUID.test(id)) return c.notFound();
    const res = await admin.file(`/manual-checks/${id}/receipt`);
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
      "content-type": "application/pdf",
      "content-length": String(file.length),
      "content-disposition": `inline; filename="receipt-${receiptId}.pdf"`,
      "cache-control": "private, no-store",
      "referrer-policy": "no-referrer",
      "x-content-type-options": "nosniff",
      // The file runs nothing and reaches nothing; only this origin's review card frames it.
      "content-security-policy": `${RECEIPT_FILE_CSP}; frame-ancestors 'self'`,
      "x-frame-options": "SAMEORIGIN",
    });
  });

  app.post("/reviews/:operation_id", (c) => {
    const form = c.get("form");
    return kit.act(
      c,
      "/backoffice/reviews",
      kit.admin("POST", `/operations/${c.req.param("operation_id")}/review`, {
        decision: form.decision,
        ...(form.decision === "approve" ? { amount: form.amount } : {}),
        reason: form.reason,
        operator: form.operator,
      }),
      form.decision === "approve" ? "Payment approved." : "Payment rejected.",
    );
  });
}

/** A receipt shown to an operator runs nothing and reaches nothing. */
export const RECEIPT_FILE_CSP = "default-src 'none'; sandbox";

/** One item of the admin manual-check queue. */
interface ManualCheckItem {
  shop_id: string;
  receipt_id: string | null;
  operation: Record<string, string | undefined>;
  findings: { check: string; outcome: string; detail: string }[];
  /** What the receipt says, when the receipts service could be asked. */
  review: null | {
    actual_amount: string | null;
    layout: string | null;
    transaction_id: string | null;
    submitted_at: string;
    sha256: string;
  };
}

function reviewCard(item: ManualCheckItem, csrf: string): Html {
  const review = item.review;
  const op = item.operation;
  const id = op.operation_id ?? "";
  const row = (label: string, value: string | undefined) =>
    value ? html`<div><dt>${label}</dt><dd>${value}</dd></div>` : "";
  return html`<section aria-labelledby="mc-${id}"><h2 id="mc-${id}">Payment <code>${id}</code></h2>
<div class="cols">
<div><h3>Requisites shown to the payer</h3><dl>
${row("Expected amount", `${op.expected_amount} ${op.currency}`)}${row("Method", op.method)}
${row("Number", op.number)}${row("Name", op.name)}${row("Bank", op.bankname_details ?? op.bankname)}
${row("Reason", op.manual_check_reason)}${row("Created", op.created_at)}${row("Shop", item.shop_id)}
</dl></div>
<div><h3>Receipt</h3><dl>
${row("Receipt", item.receipt_id ?? "none")}
${review ? html`${row("Amount on the receipt", review.actual_amount ?? undefined)}${row("Layout", review.layout ?? undefined)}${row("Transaction id", review.transaction_id ?? undefined)}${row("Submitted", review.submitted_at)}${row("SHA-256", review.sha256)}` : ""}
</dl>
<h4>Findings</h4>
<ul>${item.findings.map((f) => html`<li><strong>${f.check}</strong> (${f.outcome}): ${f.detail}</li>`)}</ul>
</div>
</div>
${
  item.receipt_id
    ? html`<h3>The receipt file</h3>
<iframe class="receipt" src="/backoffice/reviews/${id}/receipt" title="Receipt of payment ${id}"></iframe>
<p><a href="/backoffice/reviews/${id}/receipt" target="_blank" rel="noopener">Open the receipt in a new tab</a></p>`
    : ""
}
${postForm(
  `/backoffice/reviews/${id}`,
  csrf,
  html`<fieldset><legend>Decision</legend>
<label class="inline"><input type="radio" name="decision" value="approve" checked> Approve</label>
<label class="inline"><input type="radio" name="decision" value="reject"> Reject</label></fieldset>
${field(`amount-${id}`, "Amount that arrived (with approve)", { name: "amount", value: review?.actual_amount ?? op.expected_amount })}
<label for="reason-${id}">Reason</label><textarea id="reason-${id}" name="reason" required></textarea>
${field(`operator-${id}`, "Operator", { name: "operator", required: true })}
<button type="submit">Record decision</button>`,
)}
</section>`;
}
