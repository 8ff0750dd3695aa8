import type { Hono } from "hono";
import { html } from "hono/html";
import type { BackofficeEnv, PageKit } from "../page-kit.ts";
import { errorText } from "../page-kit.ts";
import { field, type Html, layout, postForm } from "../views.ts";

/** Dead letters: events a consumer gave up on; the operator retries or discards each. */
export function deadLetterPages(app: Hono<BackofficeEnv>, kit: PageKit) {
  app.get("/dead-letters", async (c) => {
    const c1 = kit.ctx(c, "dead-letters");
    const all = c.req.query("all") === "1";
    const res = await kit.admin("GET", `/dead-letters${all ? "" : "?status=open"}`);
    if (res.status >= 300) return c.html(layout("Dead letters", { ...c1, error: errorText(res) }, html``));
    const items = (res.json?.dead_letters ?? []) as DeadLetterItem[];
    const toggle = all
      ? html`<p><a href="/backoffice/dead-letters">Show only the open ones</a></p>`
      : html`<p><a href="/backoffice/dead-letters?all=1">Show the retried and discarded ones too</a></p>`;
    return c.html(
      layout(
        "Dead letters",
        c1,
        html`${toggle}${
          items.length === 0
            ? html`<section><p>${all ? "No dead letters." : "No event is waiting for an operator."}</p></section>`
            : items.map((item) => deadLetterCard(item, c1.csrf))
        }`,
      ),
    );
  });

  app.post("/dead-letters/:service/:consumer/:event_id/:action{retry|discard}", (c) => {
    const form = c.get("form");
    const { service, consumer, event_id: eventId, action } = c.req.param();
    const path = `/dead-letters/${encodeURIComponent(service)}/${encodeURIComponent(consumer)}/${encodeURIComponent(eventId)}/${action}`;
    return kit.act(
      c,
      "/backoffice/dead-letters",
      kit.admin(
        "POST",
        path,
        action === "retry" ? { operator: form.operator } : { operator: form.operator, reason: form.reason },
      ),
      action === "retry" ? "Event applied again." : "Dead letter discarded.",
    );
  });
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

function deadLetterCard(item: DeadLetterItem, csrf: string): Html {
  const key = `${item.service}/${item.consumer}/${item.event_id}`;
  const id = `${item.service}-${item.consumer}-${item.event_id}`;
  const row = (label: string, value: string | number | undefined) =>
    value === undefined || value === "" ? "" : html`<div><dt>${label}</dt><dd>${String(value)}</dd></div>`;
  return html`<section aria-labelledby="dl-${id}"><h2 id="dl-${id}">${item.subject} <small>(${item.status})</small></h2>
<dl>
${row("Service", item.service)}${row("Consumer", item.consumer)}${row("Event id", item.event_id)}
${row("Attempts", item.attempts)}${row("First failed", item.first_failed_at)}${row("Last failed", item.last_failed_at)}
${row("Resolved", item.resolved_at)}${row("By", item.resolved_by)}${row("Reason", item.resolution_reason)}
</dl>
<h3>Last error</h3><pre>${item.error}</pre>
${
  item.status === "open"
    ? html`<div class="cols">
${postForm(
  `/backoffice/dead-letters/${key}/retry`,
  csrf,
  html`<h3>Retry</h3><p>Applies the event again, once, with its consumer's handler. Fix the cause first.</p>
${field(`retry-operator-${id}`, "Operator", { name: "operator", required: true })}
<button type="submit">Retry</button>`,
)}
${postForm(
  `/backoffice/dead-letters/${key}/discard`,
  csrf,
  html`<h3>Discard</h3><p>Leaves the event unapplied for good.</p>
<label for="discard-reason-${id}">Reason</label><textarea id="discard-reason-${id}" name="reason" required></textarea>
${field(`discard-operator-${id}`, "Operator", { name: "operator", required: true })}
<button type="submit">Discard</button>`,
)}
</div>`
    : ""
}
</section>`;
}
