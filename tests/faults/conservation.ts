/**
 * The money-conservation checker: compares what the providers did (the sandbox's own
 * books) with what the gateway booked and told, per shop and currency. Six invariants,
 * each able to fail (`TAMPER` corrupts what each guards):
 *
 * - `money`: per shop and currency, the providers' collected minus paid out equals what
 *   the ledger booked against the providers (provider clearing: the payments' gross, the
 *   payouts' outflow, suspense bookings), to the kopeck, and the shop's accounts sum to zero;
 * - `payout_once`: no payout was paid by more than one provider, nor by a provider and the pool;
 * - `status_agrees`: every operation's final status agrees with its providers' final facts,
 *   and every provider fact the gateway did not expect is on the operator's list;
 * - `provider_closed`: every operation the gateway ended (cancelled, expired, rejected) is
 *   closed at its provider too (withdrawn or final), so its requisites take no more money;
 * - `events_settled`: no event is left unpublished or unapplied by a consumer after
 *   quiescence, unless it is on the operator's dead-letter list with a reason;
 * - `webhooks_once`: every terminal operation has one terminal event, delivered, and
 *   received with a valid signature (when the run's receivers are given).
 */
import { CONSUMER_SUBJECTS, subjectsRegex } from "@gw/events";
import { Decimal } from "@gw/money";
import type { Books } from "@gw/sandbox-provider/books";
import type postgres from "postgres";

/** The invariants' ids, in the order they are printed. */
export const INVARIANTS = [
  "money",
  "payout_once",
  "status_agrees",
  "provider_closed",
  "events_settled",
  "webhooks_once",
] as const;
export type InvariantId = (typeof INVARIANTS)[number];

/** What one invariant examined and found. */
export interface InvariantResult {
  id: InvariantId;
  name: string;
  examined: number;
  violations: unknown[];
}

/** The operator's lists the gateway keeps (absent on a gateway that does not have them yet). */
export interface OperatorLists {
  deadLetters?: { consumer: string; event_id: string; error: string; status: string }[] | undefined;
  providerFacts?: { operation_id: string; provider: string; kind: string; status: string }[] | undefined;
}

export interface ConservationInput {
  /** A read-only connection to the gateway's database (the checker only selects). */
  sql: postgres.Sql;
  /** The providers' side: the sandbox's books. */
  books: Books;
  lists: OperatorLists;
  /** The terminal webhooks the run's receivers got with a valid signature, by event id; absent when standalone. */
  received?: ReadonlyMap<string, number> | undefined;
  /** Webhooks the run's receivers got whose signature did not check out. */
  unverified?: number | undefined;
}

interface OpRow {
  id: string;
  shop_id: string;
  type: "payment" | "payout";
  status: string;
  provider: string | null;
  currency: string | null;
  actual_amount: string;
  known: boolean;
}

const TERMINAL = new Set(["completed", "rejected", "cancelled", "expired"]);
const POOL = "self_matching";

/** Fetches an admin list; `undefined` when this gateway has no such endpoint (404) or no answer. */
export async function adminList<T>(gatewayUrl: string, adminToken: string, path: string, key: string) {
  try {
    const res = await fetch(`${gatewayUrl}/admin/v1${path}`, {
      headers: { authorization: `Bearer ${adminToken}` },
      signal: AbortSignal.timeout(15_000),
    });
    if (!res.ok) return undefined;
    return ((await res.json()) as Record<string, T[]>)[key];
  } catch {
    return undefined;
  }
}

/** Runs the six invariants and returns what each examined and found. */
export async function checkConservation(input: ConservationInput): Promise<InvariantResult[]> {
  const { sql, books, lists } = input;
  const ops = await sql<OpRow[]>`
    select id::text, shop_id::text, type, status, provider, currency, actual_amount::text,
           (request_hash is not null and not (status = 'rejected' and provider is null)) as known
    from operations.operations`;
  const byId = new Map(ops.map((o) => [o.id, o]));
  const facts = lists.providerFacts ?? [];
  const factFor = (reference: string, provider: string) =>
    facts.some((f) => f.operation_id === reference && f.provider === provider);

  // --- money ----------------------------------------------------------------------
  const providerSide = new Map<string, Decimal>();
  const add = (m: Map<string, Decimal>, k: string, v: Decimal) =>
    m.set(k, (m.get(k) ?? new Decimal(0)).plus(v));
  const orphans: unknown[] = [];
  for (const r of books.references) {
    if (r.status !== "completed") continue;
    const op = byId.get(r.reference);
    if (!op) {
      orphans.push({ why: "provider moved money for a reference the gateway has no operation of", ...r });
      continue;
    }
    const signed = r.direction === "payin" ? new Decimal(r.settled) : new Decimal(r.settled).neg();
    add(providerSide, `${op.shop_id} ${r.currency}`, signed);
  }
  // What the ledger holds against the providers: provider clearing, debited by a payment's
  // gross and credited by a payout's outflow. The pool's own postings are left out: the
  // pool is no provider with books here (its payer pays its payout's recipient directly).
  const ledgerRows = await sql<{ shop_id: string; currency: string; booked: string }[]>`
    select a.owner as shop_id, p.currency,
           sum(case when p.side = 'debit' then p.amount else -p.amount end)::text as booked
    from ledger.postings p
    join ledger.accounts a on a.id = p.account_id
    join ledger.transfers t on t.id = p.transfer_id
    left join operations.operations op on op.id = t.operation_id
    where a.kind = 'provider_clearing'
      and not (op.provider is not distinct from ${POOL} and t.kind in ('payment_settle', 'payout_complete'))
    group by 1, 2`;
  const ledgerSide = new Map(ledgerRows.map((r) => [`${r.shop_id} ${r.currency}`, new Decimal(r.booked)]));
  const moneyViolations: unknown[] = [...orphans];
  for (const key of new Set([...providerSide.keys(), ...ledgerSide.keys()])) {
    const provider = providerSide.get(key) ?? new Decimal(0);
    const booked = ledgerSide.get(key) ?? new Decimal(0);
    if (!provider.eq(booked)) {
      const [shop, currency] = key.split(" ");
      moneyViolations.push({
        shop,
        currency,
        providers_collected_minus_paid: provider.toFixed(2),
        ledger_booked: booked.toFixed(2),
        difference: provider.minus(booked).toFixed(2),
      });
    }
  }
  // Where the money differs, reference by reference: what the providers settled against
  // what the ledger's provider clearing holds for that operation.
  if (moneyViolations.length > orphans.length) {
    const perOp = await sql<{ operation_id: string; booked: string }[]>`
      select t.operation_id::text, sum(case when p.side = 'debit' then p.amount else -p.amount end)::text as booked
      from ledger.postings p join ledger.accounts a on a.id = p.account_id
      join ledger.transfers t on t.id = p.transfer_id
      where a.kind = 'provider_clearing' and t.operation_id is not null group by 1`;
    const bookedFor = new Map(perOp.map((r) => [r.operation_id, new Decimal(r.booked)]));
    const settledFor = new Map<string, { sum: Decimal; by: string[] }>();
    for (const r of books.references) {
      if (r.status !== "completed") continue;
      const signed = r.direction === "payin" ? new Decimal(r.settled) : new Decimal(r.settled).neg();
      const prev = settledFor.get(r.reference) ?? { sum: new Decimal(0), by: [] };
      settledFor.set(r.reference, {
        sum: prev.sum.plus(signed),
        by: [...prev.by, `${r.provider} ${r.settled}`],
      });
    }
    for (const [reference, settled] of settledFor) {
      const op = byId.get(reference);
      const booked = bookedFor.get(reference) ?? new Decimal(0);
      if (!op || op.provider === POOL || settled.sum.eq(booked)) continue;
      moneyViolations.push({
        reference,
        type: op.type,
        gateway: `${op.status} via ${op.provider}`,
        providers_settled: settled.by,
        ledger_booked: booked.toFixed(2),
      });
    }
  }
  const unbalanced = await sql`
    select owner as shop_id, currency, sum(balance)::text as sum from ledger.accounts
    group by 1, 2 having sum(balance) <> 0`;
  moneyViolations.push(...unbalanced.map((r) => ({ why: "the shop's accounts do not sum to zero", ...r })));

  // --- payout_once ----------------------------------------------------------------
  const paidBy = new Map<string, string[]>();
  for (const r of books.references)
    if (r.direction === "payout" && r.status === "completed")
      paidBy.set(r.reference, [...(paidBy.get(r.reference) ?? []), r.provider]);
  const payoutViolations: unknown[] = [];
  for (const [reference, providers] of paidBy) {
    if (providers.length > 1) payoutViolations.push({ reference, paid_by: providers });
    const op = byId.get(reference);
    if (op?.provider === POOL) payoutViolations.push({ reference, paid_by: [...providers, POOL] });
  }
  const completes = await sql`
    select operation_id::text, count(*)::int as n from ledger.transfers where kind = 'payout_complete'
    group by 1 having count(*) > 1`;
  payoutViolations.push(...completes.map((r) => ({ why: "payout completed twice in the ledger", ...r })));
  const payoutsExamined = ops.filter((o) => o.type === "payout").length;

  // --- status_agrees --------------------------------------------------------------
  const held = new Map<string, Books["references"]>();
  for (const r of books.references) held.set(r.reference, [...(held.get(r.reference) ?? []), r]);
  const statusViolations: unknown[] = [];
  const openViolations: unknown[] = [];
  let ended = 0;
  for (const op of ops) {
    const holders = held.get(op.id) ?? [];
    const own = op.provider ? holders.find((h) => h.provider === op.provider) : undefined;
    if (op.provider && op.provider !== POOL && op.known) {
      const fact = own?.status;
      if (op.status === "completed" && fact !== "completed")
        statusViolations.push({ id: op.id, why: "completed, but its provider did not complete it", fact });
      if (
        op.status === "completed" &&
        own &&
        fact === "completed" &&
        !new Decimal(own.settled).eq(op.actual_amount)
      )
        statusViolations.push({
          id: op.id,
          why: "actual amount differs from the provider's legs",
          actual: op.actual_amount,
          provider_legs: own.settled,
        });
      if (
        TERMINAL.has(op.status) &&
        op.status !== "completed" &&
        fact === "completed" &&
        !factFor(op.id, op.provider)
      )
        statusViolations.push({ id: op.id, why: `${op.status}, but its provider completed it`, fact });
      if (!TERMINAL.has(op.status) && (fact === "completed" || fact === "rejected"))
        statusViolations.push({ id: op.id, why: `still ${op.status} after its provider's final ${fact}` });
      if (TERMINAL.has(op.status) && op.status !== "completed") ended++;
      if (TERMINAL.has(op.status) && fact === "pending")
        openViolations.push({ id: op.id, why: `${op.status}, but its provider still holds it open` });
    }
    // A completion by a provider the operation is not routed to: the gateway must have it
    // on the operator's list of unexpected provider facts (and booked on suspense).
    for (const h of holders) {
      if (h.status !== "completed" || h.provider === op.provider) continue;
      if (!factFor(op.id, h.provider))
        statusViolations.push({
          id: op.id,
          why: "completed by a provider the gateway did not route it to, and not on the provider-facts list",
          provider: h.provider,
          routed_to: op.provider,
          gateway_status: op.status,
        });
    }
  }

  // --- events_settled -------------------------------------------------------------
  const dead = new Map((lists.deadLetters ?? []).map((d) => [d.event_id, d]));
  const excused = (eventId: string) => {
    const d = dead.get(eventId);
    return d !== undefined && d.error.trim() !== "";
  };
  const stuck = [
    ...(await sql`select 'operations outbox unpublished' as why, id::text as event_id from operations.outbox where published_at is null`),
    ...(await sql`select 'ledger outbox unpublished' as why, id::text as event_id from ledger.outbox where published_at is null`),
    ...(await sql`select 'matching outbox unpublished' as why, id::text as event_id from matching.outbox where published_at is null`),
    ...(await sql`select 'receipts outbox unpublished' as why, id::text as event_id from receipts.outbox where published_at is null`),
    // Each consumer against the subjects it reads (CONSUMER_SUBJECTS): an event is in a
    // consumer's inbox exactly when its subject is on that consumer's list.
    ...(await sql`select 'not applied by ledger' as why, e.id::text as event_id from operations.outbox e
                  where e.subject ~ ${subjectsRegex(CONSUMER_SUBJECTS.ledger)} and not exists
                    (select 1 from ledger.inbox i where i.consumer = 'ledger' and i.event_id = e.id)`),
    ...(await sql`select 'not applied by ledger-provider-facts' as why, e.id::text as event_id from operations.outbox e
                  where e.subject ~ ${subjectsRegex(CONSUMER_SUBJECTS["ledger-provider-facts"])} and not exists
                    (select 1 from ledger.inbox i where i.consumer = 'ledger-provider-facts' and i.event_id = e.id)`),
    ...(await sql`select 'not applied by webhooks' as why, e.id::text as event_id from operations.outbox e
                  where e.subject ~ ${subjectsRegex(CONSUMER_SUBJECTS.webhooks)} and not exists
                    (select 1 from webhooks.inbox i where i.consumer = 'webhooks' and i.event_id = e.id)`),
    ...(await sql`select 'not applied by operations-withdrawals' as why, e.id::text as event_id from operations.outbox e
                  where e.subject ~ ${subjectsRegex(CONSUMER_SUBJECTS["operations-withdrawals"])} and not exists
                    (select 1 from operations.inbox i where i.consumer = 'operations-withdrawals' and i.event_id = e.id)`),
    ...(await sql`select 'not applied by operations-pool-payins' as why, e.id::text as event_id from operations.outbox e
                  where e.subject ~ ${subjectsRegex(CONSUMER_SUBJECTS["operations-pool-payins"])} and not exists
                    (select 1 from operations.inbox i where i.consumer = 'operations-pool-payins' and i.event_id = e.id)`),
    ...(await sql`select 'not applied by operations-pool-payouts' as why, e.id::text as event_id from matching.outbox e
                  where e.subject ~ ${subjectsRegex(CONSUMER_SUBJECTS["operations-pool-payouts"])} and not exists
                    (select 1 from operations.inbox i where i.consumer = 'operations-pool-payouts' and i.event_id = e.id)`),
    ...(await sql`select 'webhook delivery still pending' as why, event_id::text from webhooks.deliveries where status = 'pending'`),
    ...(await sql`select 'create still routing' as why, id::text as event_id from operations.operations where status = 'routing'`),
  ].filter((r) => !excused(String(r.event_id)));
  const deadWithoutReason = (lists.deadLetters ?? []).filter((d) => d.error.trim() === "");
  const [eventCount] = await sql<{ n: number }[]>`
    select ((select count(*) from operations.outbox) + (select count(*) from ledger.outbox)
          + (select count(*) from matching.outbox) + (select count(*) from receipts.outbox))::int as n`;

  // --- webhooks_once --------------------------------------------------------------
  const terminalDeliveries = await sql<
    { operation_id: string; event_type: string; event_ids: string[]; states: string[] }[]
  >`
    select operation_id::text, event_type, array_agg(event_id::text) as event_ids, array_agg(status) as states
    from webhooks.deliveries where event_type ~ '\\.(completed|rejected|cancelled|expired)$'
    group by 1, 2`;
  const deliveredFor = new Map(terminalDeliveries.map((d) => [`${d.operation_id} ${d.event_type}`, d]));
  const webhookViolations: unknown[] = [];
  const terminalOps = ops.filter((o) => o.known && TERMINAL.has(o.status));
  for (const op of terminalOps) {
    const d = deliveredFor.get(`${op.id} ${op.type}.${op.status}`);
    if (!d) {
      webhookViolations.push({ id: op.id, why: "no terminal webhook", status: op.status });
      continue;
    }
    if (d.event_ids.length > 1)
      webhookViolations.push({ id: op.id, why: "terminal webhook under several event ids" });
    if (d.states.some((s) => s !== "delivered" && s !== "failed"))
      webhookViolations.push({ id: op.id, why: "terminal webhook not delivered", states: d.states });
    if (input.received && !d.event_ids.every((e) => input.received?.has(e)))
      webhookViolations.push({ id: op.id, why: "terminal webhook never received with a valid signature" });
  }
  // A terminal webhook for an operation whose final status is another one: told twice, differently.
  for (const d of terminalDeliveries) {
    const op = byId.get(d.operation_id);
    if (op && `${op.type}.${op.status}` !== d.event_type)
      webhookViolations.push({ id: d.operation_id, why: `sent ${d.event_type}, but it is ${op.status}` });
  }
  if ((input.unverified ?? 0) > 0)
    webhookViolations.push({ why: "webhooks received with an invalid signature", n: input.unverified });

  return [
    {
      id: "money",
      name: "providers' collected minus paid out = ledger's provider clearing, per shop and currency; accounts sum to zero",
      examined: books.references.filter((r) => r.status === "completed").length,
      violations: moneyViolations,
    },
    {
      id: "payout_once",
      name: "no payout paid by more than one provider (or a provider and the pool), none twice",
      examined: payoutsExamined,
      violations: payoutViolations,
    },
    {
      id: "status_agrees",
      name: "every operation's final status agrees with its providers' final facts; unexpected facts listed",
      examined: ops.length,
      violations: statusViolations,
    },
    {
      id: "provider_closed",
      name: "every operation the gateway ended is closed at its provider (withdrawn or final)",
      examined: ended,
      violations: openViolations,
    },
    {
      id: "events_settled",
      name: "no event unpublished or unapplied after quiescence unless dead-lettered with a reason",
      examined: eventCount?.n ?? 0,
      violations: [
        ...stuck,
        ...deadWithoutReason.map((d) => ({ why: "dead letter without a reason", ...d })),
      ],
    },
    {
      id: "webhooks_once",
      name: "every terminal operation: one terminal event id, delivered, received with a valid signature",
      examined: terminalOps.length,
      violations: webhookViolations,
    },
  ];
}

/**
 * Corrupts what each invariant guards, for `--tamper` (the stack stopped, triggers off,
 * inside the caller's transaction); returns the rows changed.
 */
export const TAMPER: Record<InvariantId, (tx: postgres.TransactionSql) => Promise<{ count: number }>> = {
  // One kopeck more on one leg of a completed payin: the provider reports more than was booked.
  money: (tx) => tx`update sandbox.legs set amount = amount + 0.01 where id = (
      select l.id from sandbox.legs l join sandbox.operations o on o.id = l.operation_id
      where o.direction = 'payin' and o.status = 'completed' limit 1)`,
  // A completed payout is paid a second time by another provider.
  payout_once: async (tx) => {
    await tx`insert into sandbox.providers (name, credentials, payin, payout)
             values ('tamper-second', 'tamper-credentials-0000', '{"mode":"accept"}', '{"mode":"accept"}')
             on conflict do nothing`;
    return tx`insert into sandbox.operations (id, provider, reference, direction, method, amount, currency,
                callback_url, decision, status)
              select gen_random_uuid(), 'tamper-second', reference, direction, method, amount, currency,
                callback_url, 'accepted', 'completed'
              from sandbox.operations where direction = 'payout' and status = 'completed' limit 1`;
  },
  // A provider's final fact turns into the other one: a completed operation's provider
  // rejected it (preferred: an ended operation's provider completing it may be on the
  // operator's list of provider facts already, which the check rightly excuses), or an
  // ended one's provider completed it.
  status_agrees: (
    tx,
  ) => tx`update sandbox.operations set status = case when status = 'completed' then 'rejected' else 'completed' end
      where id = (select s.id from sandbox.operations s join operations.operations op on op.id::text = s.reference
        and op.provider = s.provider
      where op.status in ('completed', 'rejected', 'cancelled')
      order by (op.status = 'completed' and s.status = 'completed') desc, op.status limit 1)`,
  // A cancelled operation its provider still holds open.
  provider_closed: (tx) => tx`update sandbox.operations set status = 'pending', settled_at = null where id = (
      select s.id from sandbox.operations s join operations.operations op on op.id::text = s.reference
        and op.provider = s.provider
      where op.status in ('cancelled', 'rejected', 'expired') order by s.status desc limit 1)`,
  // An event no consumer applied.
  events_settled: (tx) =>
    tx`delete from ledger.inbox where event_id = (select event_id from ledger.inbox where consumer = 'ledger' limit 1)`,
  // A terminal webhook that was never made.
  webhooks_once: (tx) =>
    tx`delete from webhooks.deliveries where event_id = (select event_id from webhooks.deliveries
        where event_type ~ '\\.(completed|rejected|cancelled)$' limit 1)`,
};

/** Renders the table of what was examined and `N of M invariants broken`. */
export function renderTable(
  results: InvariantResult[],
  enforced?: readonly InvariantId[],
  shown = 5,
): string {
  const lines = ["invariant        examined  broken  what"];
  for (const r of results) {
    const state = r.violations.length > 0 ? "BROKEN" : r.examined === 0 ? "EMPTY" : "ok";
    const note = enforced && !enforced.includes(r.id) ? " (not enforced yet)" : "";
    lines.push(`${r.id.padEnd(16)} ${String(r.examined).padStart(8)}  ${state.padEnd(6)}  ${r.name}${note}`);
    for (const v of r.violations.slice(0, shown)) lines.push(`    ${JSON.stringify(v)}`);
    if (r.violations.length > shown) lines.push(`    ... ${r.violations.length - shown} more`);
  }
  const broken = results.filter((r) => r.violations.length > 0).length;
  lines.push(`${broken} of ${results.length} invariants broken`);
  return lines.join("\n");
}
