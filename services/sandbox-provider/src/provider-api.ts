import { randomUUID } from "node:crypto";
import type { Database, Sql } from "@gw/db";
import { Decimal, isMethod, METHODS, parseRequestAmount } from "@gw/money";
import { metricsRegistry } from "@gw/rpc";
import { asc, eq, sql } from "drizzle-orm";
import { type Context, Hono } from "hono";
import { Counter } from "prom-client";
import { z } from "zod";
import type { CallbackSender } from "./callbacks.ts";
import { type Behaviour, legs, operations, type providers } from "./db/schema.ts";
import { ApiError, parseBody } from "./errors.ts";
import {
  CREATE_FAULTS,
  type CreateFault,
  faultFor,
  ReadCounter,
  statusFault,
  withdrawFault,
} from "./faults.ts";
import { requisitesFor } from "./requisites.ts";
import { logFault, settle } from "./settle.ts";
import { secretsEqual } from "./signature.ts";

const createRequests = new Counter({
  name: "sandbox_create_requests_total",
  help: "Create requests received by the sandbox, by provider, direction and decision.",
  labelNames: ["provider", "direction", "decision"],
  registers: [metricsRegistry],
});

const reference = z.string().min(1).max(128);
const common = {
  reference,
  method: z.string().min(1).max(64),
  amount: z.string().max(32),
  currency: z.string().min(3).max(8),
  callback_url: z.url({ protocol: /^https?$/ }).max(2048),
};
const payinBody = z.object({ ...common });
const withdrawBody = z.object({ direction: z.enum(["payin", "payout"]).optional() });
const payoutBody = z.object({
  ...common,
  destination: z.object({
    number: z.string().min(1).max(64),
    name: z.string().max(256).optional(),
    bankname: z.string().min(1).max(64).optional(),
  }),
});

type OperationRow = typeof operations.$inferSelect;
type Direction = "payin" | "payout";
/** What the provider view shows of an operation. */
type ViewRow = Pick<
  OperationRow,
  | "id"
  | "reference"
  | "direction"
  | "decision"
  | "declineReason"
  | "status"
  | "requisites"
  | "receiptRequired"
  | "expiresAt"
>;
/** What a create reads back of the operation it inserted or found. */
type CreatedRow = ViewRow &
  Pick<OperationRow, "provider" | "method" | "amount" | "currency" | "number" | "requests">;
/** A provider as last read, with its row's `xmin`: Postgres gives every new version of a row a new one. */
type KnownProvider = Omit<typeof providers.$inferSelect, "updatedAt"> & { version: string };

/** Held `no_answer` and delayed requests, so that stopping the server can release them. */
export class HeldRequests {
  readonly #controllers = new Set<AbortController>();
  /** True once the server is stopping: answers then close their connection. */
  stopping = false;

  /** Waits `ms`, or until the client leaves, or until the server stops; says why it woke. */
  wait(ms: number, client: AbortSignal): Promise<"elapsed" | "aborted"> {
    if (client.aborted || this.stopping) return Promise.resolve("aborted");
    const controller = new AbortController();
    this.#controllers.add(controller);
    return new Promise<"elapsed" | "aborted">((resolve) => {
      const done = (why: "elapsed" | "aborted") => {
        clearTimeout(timer);
        client.removeEventListener("abort", onAbort);
        controller.signal.removeEventListener("abort", onAbort);
        this.#controllers.delete(controller);
        resolve(why);
      };
      const onAbort = () => done("aborted");
      const timer = setTimeout(() => done("elapsed"), ms);
      client.addEventListener("abort", onAbort, { once: true });
      controller.signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  releaseAll(): void {
    this.stopping = true;
    for (const c of this.#controllers) c.abort();
  }
}

export interface ProviderApiDeps {
  db: Database;
  sql: Sql;
  sender: CallbackSender;
  held: HeldRequests;
  noAnswerMaxMs: number;
}

/** The provider-facing JSON of an operation, as create answers and the status read return it. */
export function providerView(op: ViewRow, opLegs: (typeof legs.$inferSelect)[]) {
  const view: Record<string, unknown> = { id: op.id, reference: op.reference, direction: op.direction };
  if (op.decision === "declined") {
    return {
      ...view,
      decision: "declined",
      reason: op.declineReason ?? "declined",
      // A tombstone (withdrawn by key before any create) says so: a confirmed withdrawal.
      status: op.status === "withdrawn" ? "withdrawn" : "rejected",
      legs: [],
    };
  }
  // A request the provider never answered has no decision the gateway could have seen.
  if (op.decision === "accepted") view.decision = "accepted";
  view.status = op.status;
  if (op.requisites) view.requisites = op.requisites;
  view.receipt_required = op.receiptRequired;
  if (op.expiresAt) view.expires_at = op.expiresAt.toISOString();
  view.legs = opLegs.map((l) => ({ id: l.id, amount: l.amount, completed_at: l.completedAt.toISOString() }));
  return view;
}

/**
 * The API a payment provider offers the gateway, one base URL per hosted provider:
 * `/providers/{name}/v1/...`, authenticated by `Authorization: Bearer <credentials>`.
 */
export function providerApi(deps: ProviderApiDeps) {
  const { db } = deps;
  const api = new Hono();

  // Read on every request, so built once: building a drizzle query costs more CPU than
  // its round trip, and a request then pays only the round trip.
  const legsQuery = db
    .select()
    .from(legs)
    .where(eq(legs.operationId, sql.placeholder("operationId")))
    .orderBy(asc(legs.position))
    .prepare("sandbox_legs_of");
  const legsOf = (operationId: string) => legsQuery.execute({ operationId });

  /**
   * The providers as last read, so that a create needs no read of its own: its insert
   * takes effect only while the provider's row still has the `xmin` read with it, and
   * otherwise inserts nothing, and the create reads the provider again and decides anew.
   * A change by any writer (this process, another replica, SQL by hand) is so seen by the
   * very next create, with no invalidation to deliver.
   */
  const known = new Map<string, KnownProvider>();
  async function load(name: string): Promise<KnownProvider | undefined> {
    const [row] = await deps.sql<KnownProvider[]>`
      select name, credentials, payin, payout, xmin::text as version from sandbox.providers where name = ${name}`;
    if (row) known.set(name, row);
    else known.delete(name);
    return row;
  }

  /** The path's provider if the call carries its credentials; `cached` may answer from a stale copy. */
  async function authenticate(c: Context, cached = false): Promise<KnownProvider> {
    const name = c.req.param("name") ?? "";
    const header = c.req.header("authorization") ?? "";
    const token = header.startsWith("Bearer ") ? header.slice(7) : "";
    const accepts = (p: KnownProvider | undefined): p is KnownProvider =>
      p !== undefined && token !== "" && secretsEqual(token, p.credentials);
    const copy = cached ? known.get(name) : undefined;
    if (accepts(copy)) return copy;
    // A copy that refuses may predate new credentials: only the row itself refuses.
    const provider = await load(name);
    // An unknown provider and wrong credentials look the same, so names cannot be probed.
    if (!accepts(provider)) throw new ApiError(401, "unauthorized", "missing or wrong credentials");
    return provider;
  }

  /** The create's body, checked; nothing in it depends on the provider's settings. */
  async function createRequest(c: Context, direction: Direction) {
    let body: z.infer<typeof payinBody>;
    let destination: z.infer<typeof payoutBody>["destination"] | undefined;
    if (direction === "payout") {
      const payout = await parseBody(c, payoutBody);
      body = payout;
      destination = payout.destination;
    } else {
      body = await parseBody(c, payinBody);
    }
    const amount = parseRequestAmount(body.amount);
    if (!amount || amount.lte(0))
      throw new ApiError(
        400,
        "validation_failed",
        "amount must be a positive decimal with scale 2",
        "amount",
      );
    if (!isMethod(body.method))
      throw new ApiError(422, "unsupported_method", `method ${body.method} is not served`, "method");
    const { currency, rail } = METHODS[body.method];
    if (body.currency !== currency)
      throw new ApiError(422, "currency_mismatch", `${body.method} is paid in ${currency}`, "currency");
    if (destination && rail === "phone" && !destination.bankname) {
      throw new ApiError(
        400,
        "validation_failed",
        "bankname is required for phone payouts",
        "destination.bankname",
      );
    }
    return { body, destination, amount, rail };
  }

  async function create(c: Context, direction: Direction) {
    let provider = await authenticate(c, true);
    let request: Awaited<ReturnType<typeof createRequest>>;
    try {
      request = await createRequest(c, direction);
    } catch (err) {
      // Answered from a copy: a caller whose credentials were just replaced learns nothing.
      await authenticate(c);
      throw err;
    }
    const { body, destination, amount, rail } = request;
    const id = randomUUID();
    let row: CreatedRow | undefined;
    let behaviour: Behaviour;
    let fault: CreateFault | undefined;
    for (let attempt = 1; ; attempt++) {
      behaviour = provider[direction];
      const key = { provider: provider.name, direction, reference: body.reference };
      // The fault is the reference's own (seeded), so a repeat of the create meets the same one.
      fault =
        behaviour.mode === "accept" ? faultFor(behaviour.faults, "create", CREATE_FAULTS, key) : undefined;
      const decision =
        fault === "decline_after_delay"
          ? "declined"
          : fault === "never_answer"
            ? "no_answer"
            : behaviour.mode === "accept"
              ? "accepted"
              : behaviour.mode === "decline"
                ? "declined"
                : "no_answer";
      const accepted = decision === "accepted";
      if (fault === "record_after_delay") {
        // Worked on after the caller may have left: nothing is recorded before the delay.
        const waited = await deps.held.wait(behaviour.faults?.slow_ms ?? 0, new AbortController().signal);
        if (waited === "aborted") throw new ApiError(503, "no_answer", "the provider is stopping");
      }
      const requisites =
        accepted && direction === "payin"
          ? requisitesFor(rail, `${provider.name}:${body.reference}`, behaviour.requisites)
          : null;
      const expiresAt =
        accepted && behaviour.expires_in_seconds
          ? new Date(Date.now() + behaviour.expires_in_seconds * 1000).toISOString()
          : null;
      // One statement, prepared once per connection by postgres.js: it inserts only while
      // the provider is as read (see `known`), and a repeat of the reference counts itself.
      const [inserted] = await deps.sql<(Omit<CreatedRow, "expiresAt"> & { expiresAt: string | null })[]>`
        insert into sandbox.operations (id, provider, reference, direction, method, amount, currency,
          number, name, bankname, callback_url, decision, decline_reason, requisites, receipt_required,
          expires_at, status)
        select ${id}::uuid, p.name, ${body.reference}::text, ${direction}::text, ${body.method}::text,
          ${amount.toFixed(2)}::numeric, ${body.currency}::text, ${destination?.number ?? null}::text,
          ${destination?.name ?? null}::text,
          ${rail === "phone" ? (destination?.bankname ?? null) : null}::text, ${body.callback_url}::text,
          ${decision}::text,
          ${decision === "declined" ? (behaviour.decline_reason ?? "declined_by_provider") : null}::text,
          ${requisites && JSON.stringify(requisites)}::jsonb, ${accepted && behaviour.receipt_required}::boolean,
          ${expiresAt}::timestamptz, ${decision === "declined" ? "rejected" : "pending"}::text
        from sandbox.providers p where p.name = ${provider.name} and p.xmin::text = ${provider.version}
        on conflict (provider, reference) do update set requests = sandbox.operations.requests + 1,
          -- A tombstone takes the figures of the first create that reaches it (refused all the same).
          method = coalesce(sandbox.operations.method, excluded.method),
          amount = coalesce(sandbox.operations.amount, excluded.amount),
          currency = coalesce(sandbox.operations.currency, excluded.currency),
          number = case when sandbox.operations.method is null then excluded.number else sandbox.operations.number end,
          name = case when sandbox.operations.method is null then excluded.name else sandbox.operations.name end,
          bankname = case when sandbox.operations.method is null then excluded.bankname else sandbox.operations.bankname end,
          callback_url = coalesce(sandbox.operations.callback_url, excluded.callback_url)
        returning id, provider, reference, direction, method, amount, currency, number, decision, requests,
          decline_reason as "declineReason", status, requisites, receipt_required as "receiptRequired",
          to_json(expires_at) as "expiresAt"`;
      if (inserted) {
        row = { ...inserted, expiresAt: inserted.expiresAt ? new Date(inserted.expiresAt) : null };
        break;
      }
      // The provider changed since it was read, or is gone: decide again as it is now.
      if (attempt === 3) throw new Error(`provider ${provider.name} kept changing under a create`);
      provider = await authenticate(c);
    }
    createRequests.inc({ provider: provider.name, direction, decision: row.decision });

    // A repeat of a reference gets the first answer again, unless it asks for something else.
    if (row.id !== id) {
      const same =
        row.direction === direction &&
        row.method === body.method &&
        row.currency === body.currency &&
        row.amount !== null &&
        new Decimal(row.amount).eq(amount) &&
        (row.number ?? undefined) === destination?.number;
      if (!same)
        throw new ApiError(
          409,
          "reference_conflict",
          "this reference was used for a different operation",
          "reference",
        );
    }

    const signal = c.req.raw.signal;
    // The first create of a reference: this one inserted it, or it reached a tombstone.
    if (fault) return misbehave(c, row, fault, behaviour, row.id === id || row.requests === 1);
    if (row.decision === "no_answer") {
      // Hold the request open until the client gives up, bounded so nothing is pinned forever.
      await deps.held.wait(deps.noAnswerMaxMs, signal);
      throw new ApiError(503, "no_answer", "the provider did not answer");
    }
    if (behaviour.delay_ms && (await deps.held.wait(behaviour.delay_ms, signal)) === "aborted") {
      throw new ApiError(503, "no_answer", "the request was abandoned before the answer");
    }
    // A row this request has just inserted has no legs: only a repeat, or an answer held
    // back by a delay (the control API may settle it meanwhile), can have any to show.
    const fresh = row.id === id && !behaviour.delay_ms;
    return c.json(providerView(row, fresh ? [] : await legsOf(row.id)));
  }

  /**
   * Answers a create under its fault. The operation is recorded (taken, declined or
   * unanswered) before any of this, exactly as a real provider has it on its side.
   */
  async function misbehave(
    c: Context,
    row: CreatedRow,
    fault: CreateFault,
    behaviour: Behaviour,
    first: boolean,
  ): Promise<Response> {
    const signal = c.req.raw.signal;
    const slowMs = behaviour.faults?.slow_ms ?? 0;
    if (first) await logFault(deps.sql, row, `create.${fault}`);
    switch (fault) {
      case "never_answer":
        await deps.held.wait(deps.noAnswerMaxMs, signal);
        throw new ApiError(503, "no_answer", "the provider did not answer");
      case "accept_then_5xx":
        throw new ApiError(502, "upstream_failed", "the provider failed after taking the request");
      case "accept_then_reset": {
        // The socket is destroyed without an answer: the caller sees a connection reset.
        const incoming = (c.env as { incoming?: { socket?: { destroy(): void } } } | undefined)?.incoming;
        incoming?.socket?.destroy();
        throw new ApiError(503, "reset", "the connection was reset");
      }
      case "record_after_delay":
        // Recorded only now: the answer goes out at once (to a caller that may be gone).
        return c.json(providerView(row, first ? [] : await legsOf(row.id)));
      case "answer_after_timeout":
      case "decline_after_delay":
        if ((await deps.held.wait(slowMs, signal)) === "aborted")
          throw new ApiError(503, "no_answer", "the request was abandoned before the answer");
        return c.json(providerView(row, await legsOf(row.id)));
      case "completion_before_answer": {
        // The answer is made first (pending), the completion and its callback go out
        // before it is sent: the gateway hears the result before it hears "accepted".
        const answer = providerView(row, []);
        if (row.status === "pending" && first) {
          await settle(deps.sql, deps.sender, {
            reference: row.reference,
            provider: row.provider,
            status: "completed",
            legs: [row.amount ?? "0.00"],
          }).catch(() => undefined);
        }
        return c.json(first ? answer : providerView(row, await legsOf(row.id)));
      }
    }
  }

  api.post("/:name/v1/payins", (c) => create(c, "payin"));
  api.post("/:name/v1/payouts", (c) => create(c, "payout"));
  /** The operation this provider holds under the path's reference; 404 when it never received it. */
  async function held(c: Context, provider: { name: string }) {
    const ref = reference.safeParse(c.req.param("reference"));
    if (!ref.success) throw new ApiError(400, "validation_failed", "bad reference", "reference");
    const [row] = await db
      .select()
      .from(operations)
      .where(sql`${operations.provider} = ${provider.name} and ${operations.reference} = ${ref.data}`);
    if (!row) throw new ApiError(404, "not_found", "no operation with this reference");
    return row;
  }

  /**
   * The operation under the path's reference; for one never received, a tombstone written
   * now when the provider offers withdrawal in that direction (otherwise 404, or the
   * withdrawal's own refusal). A create racing it meets the unique (provider, reference):
   * whichever inserts first, the other finds its row, and a pending one is withdrawn below.
   */
  async function heldOrTombstoned(c: Context, provider: KnownProvider, direction: Direction) {
    const ref = reference.safeParse(c.req.param("reference"));
    if (!ref.success) throw new ApiError(400, "validation_failed", "bad reference", "reference");
    const mode = provider[direction].withdraw ?? "supported";
    const existing = await held(c, provider).catch((err: unknown) => {
      if (!(err instanceof ApiError && err.status === 404)) throw err;
      if (mode === "unsupported")
        throw new ApiError(501, "not_supported", "this provider offers no withdrawal");
      if (mode === "failing") throw new ApiError(503, "unavailable", "withdrawal failed; try again");
      return undefined;
    });
    if (existing) return existing;
    await deps.sql`
      insert into sandbox.operations (id, provider, reference, direction, decision, decline_reason, status,
        requests, settled_at)
      values (${randomUUID()}::uuid, ${provider.name}, ${ref.data}, ${direction}, 'declined',
        'withdrawn_by_key', 'withdrawn', 0, now())
      on conflict (provider, reference) do nothing`;
    return held(c, provider);
  }

  const reads = new ReadCounter();
  api.get("/:name/v1/operations/:reference", async (c) => {
    const provider = await authenticate(c);
    const row = await held(c, provider);
    const profile = provider[row.direction].faults;
    const key = { provider: provider.name, direction: row.direction, reference: row.reference };
    const fault = statusFault(profile, key, reads.next(`status:${row.id}`), Date.now());
    if (fault) await logFault(deps.sql, key, `status.${fault}`);
    if (fault === "down" || fault === "failing")
      throw new ApiError(503, "unavailable", "the status service is unavailable");
    if (fault === "slow" && (await deps.held.wait(profile?.slow_ms ?? 0, c.req.raw.signal)) === "aborted")
      throw new ApiError(503, "no_answer", "the request was abandoned before the answer");
    // Read after any delay, so a slow answer is still the current one.
    const now = fault === "slow" ? await held(c, provider) : row;
    return c.json(providerView(now, await legsOf(now.id)));
  });
  // Withdrawal: a pending operation stops taking money (its requisites are withdrawn) and
  // can no longer be settled; one already final answers its result. Idempotent. With the
  // direction in the body, a reference never received is withdrawn by key: a durable
  // tombstone (see the schema), so a create still on its way is refused and never paid.
  api.post("/:name/v1/operations/:reference/withdraw", async (c) => {
    const provider = await authenticate(c);
    // The body is optional: `{}` or nothing withdraws only what the provider holds.
    const text = await c.req.text();
    let raw: unknown = {};
    try {
      if (text.trim() !== "") raw = JSON.parse(text);
    } catch {
      throw new ApiError(400, "invalid_json", "the body is not valid JSON");
    }
    const body = withdrawBody.safeParse(raw);
    if (!body.success)
      throw new ApiError(400, "validation_failed", "direction must be payin or payout", "direction");
    const { direction } = body.data;
    const row = direction ? await heldOrTombstoned(c, provider, direction) : await held(c, provider);
    const mode = provider[row.direction].withdraw ?? "supported";
    if (mode === "unsupported")
      throw new ApiError(501, "not_supported", "this provider offers no withdrawal");
    if (mode === "failing") throw new ApiError(503, "unavailable", "withdrawal failed; try again");
    const key = { provider: provider.name, direction: row.direction, reference: row.reference };
    const fault = withdrawFault(provider[row.direction].faults, key, reads.next(`withdraw:${row.id}`));
    if (fault) {
      await logFault(deps.sql, key, `withdraw.${fault}`);
      throw new ApiError(503, "unavailable", "withdrawal failed; try again");
    }
    const [withdrawn] = await db
      .update(operations)
      .set({ status: "withdrawn", settledAt: new Date() })
      .where(sql`${operations.id} = ${row.id} and ${operations.status} = 'pending'`)
      .returning();
    const now = withdrawn ?? (await held(c, provider));
    return c.json(providerView(now, await legsOf(now.id)));
  });
  return api;
}
