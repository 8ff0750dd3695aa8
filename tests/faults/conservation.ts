/**
 * The money-conservation checker: compares what the providers did (the sandbox's own
 * books) with what the gateway booked and told, per shop and currency. Six invariants,
 * each able to fail (`TAMPER_CASES` corrupt what each guards):
 *
 * - `money`: per shop and currency, the providers' collected minus paid out equals what
 *   the ledger booked against the providers (provider clearing: the payments' gross, the
 *   payouts' outflow, suspense bookings), to the kopeck, and the shop's accounts sum to zero;
 * - `payout_once`: no payout was paid by more than one provider, nor by a provider and the pool;
 * - `payout_one_provider`: no payout is live (pending) or paid (completed) at two providers
 *   at once: a provider the cascade left holds a declined, withdrawn or tombstoned key, so a
 *   create it records late is never paid;
 * - `status_agrees`: every operation's final status agrees with its providers' final facts,
 *   and every provider fact the gateway did not expect is on the operator's list;
 * - `provider_closed`: every operation the gateway ended (cancelled, expired, rejected) is
 *   closed at its provider too (withdrawn or final), so its requisites take no more money;
 *   a rejected or refused create (`no_provider_accepted`) is closed at every provider it
 *   was passed over at as well, or its completion there is on the provider-facts list;
 * - `events_settled`: no event is left unpublished or unapplied by a consumer after
 *   quiescence, unless it is on the operator's dead-letter list with a reason, or the pool's
 *   payins consumer rightly skipped it (`poolPayinsUnapplied`);
 * - `webhooks_once`: every terminal operation has one terminal event, delivered, and
 *   received with a valid signature (when the run's receivers are given).
 */
import { fromBinary } from "@bufbuild/protobuf";
import { CONSUMER_SUBJECTS, poolPayinsSkip, subjectsRegex } from "@gw/events";
import { Decimal } from "@gw/money";
import { OperationEventSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { type Books, books as sandboxBooks } from "@gw/sandbox-provider/books";
import type postgres from "postgres";

/** The invariants' ids, in the order they are printed. */
export const INVARIANTS = [
  "money",
  "payout_once",
  "payout_one_provider",
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

/** One operation as the gateway holds it (`GET /admin/v1/audit/operations`). */
export interface GatewayOperation {
  id: string;
  shop_id: string;
  type: "payment" | "payout";
  status: string;
  /** Null while routing, for a refused create and for a placeholder. */
  provider: string | null;
  currency: string | null;
  actual_amount: string;
  /** A cancel that arrived before its create: never sent to any provider. */
  placeholder: boolean;
}

/** Provider clearing of one operation in one currency (`GET /admin/v1/audit/ledger/operations`). */
export interface OperationClearing {
  operation_id: string;
  shop_id: string;
  currency: string | null;
  /** Debits minus credits over all its transfers. */
  booked: string;
  /** The part its payment_settle and payout_complete transfers booked. */
  booked_on_completion: string;
  payout_completes: number;
}

/** Per shop and currency (`GET /admin/v1/audit/ledger/shops`). */
export interface ShopTotal {
  shop_id: string;
  currency: string;
  provider_clearing: string;
  accounts_sum: string;
}

/** A terminal webhook delivery (`GET /admin/v1/audit/webhook-deliveries?terminal=true`). */
export interface TerminalDelivery {
  event_id: string;
  event_type: string;
  operation_id: string;
  status: string;
}

/**
 * The gateway's side as the checker reads it: through the admin API
 * (`readGatewayByAdminApi`, the normal path) or, for `--tamper` only, with selects inside
 * the tampering transaction (`readGatewayBySql`).
 */
export interface GatewayView {
  operations: GatewayOperation[];
  clearing: OperationClearing[];
  shops: ShopTotal[];
  /** Events not yet published or applied and deliveries still pending, each with why. */
  unsettled: { why: string; event_id?: string; n?: number }[];
  /** How many events the gateway's outboxes hold. */
  events: number;
  terminalDeliveries: TerminalDelivery[];
}

export interface ConservationInput {
  /** The gateway's side. */
  gateway: GatewayView;
  /** The providers' side: the sandbox's books. */
  books: Books;
  lists: OperatorLists;
  /** The terminal webhooks the run's receivers got with a valid signature, by event id; absent when standalone. */
  received?: ReadonlyMap<string, number> | undefined;
  /** Webhooks the run's receivers got whose signature did not check out. */
  unverified?: number | undefined;
}

const TERMINAL = new Set(["completed", "rejected", "cancelled", "expired"]);
const POOL = "self_matching";
/** The most rows one audit page asks for (the edge's largest). */
const PAGE = 1000;

/**
 * The operation events on `operations-pool-payins`'s subjects missing from its inbox,
 * but for the ones it rightly skipped: `poolPayinsSkip` (the consumer's own predicate)
 * holds for the event, and its operation confirms that the pool was never asked (not the
 * pool's, never passed over at the pool, no pool on its shop's payin route), so no slot
 * can exist that the event would have released. A skip the operation does not confirm is
 * reported as such.
 */
export async function poolPayinsUnapplied(
  sql: postgres.Sql,
): Promise<{ why: string; event_id: string; subject: string }[]> {
  const missing = await sql<{ id: string; subject: string; payload: Uint8Array }[]>`
    select e.id::text, e.subject, e.payload from operations.outbox e
    where e.subject ~ ${subjectsRegex(CONSUMER_SUBJECTS["operations-pool-payins"])} and not exists
      (select 1 from operations.inbox i where i.consumer = 'operations-pool-payins' and i.event_id = e.id)`;
  const skipped = new Map<string, string>();
  for (const e of missing) {
    const event = fromBinary(OperationEventSchema, e.payload);
    if (poolPayinsSkip(event)) skipped.set(e.id, event.operation?.operationId ?? "");
  }
  const ids = [...new Set(skipped.values())].filter((id) => id !== "");
  const neverAsked = new Set(
    (
      await sql<{ id: string }[]>`
        select op.id::text from operations.operations op
        where op.id::text = any(${ids}::text[]) and op.provider is distinct from ${POOL}
          and not (${POOL} = any(op.routing_passed))
          and not exists (select 1 from operations.routes r
            where r.shop_id = op.shop_id and r.method = op.method and ${POOL} = any(r.payin))
          and not exists (select 1 from matching.slots s where s.payin_id = op.id and s.status = 'reserved')`
    ).map((r) => r.id),
  );
  return missing
    .filter((e) => !neverAsked.has(skipped.get(e.id) ?? ""))
    .map((e) => ({
      why: skipped.has(e.id)
        ? "skipped by operations-pool-payins though the pool may hold a slot"
        : "not applied by operations-pool-payins",
      event_id: e.id,
      subject: e.subject,
    }));
}

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

/** One admin read that must answer: anything but 200 throws (a check that cannot read must not pass). */
async function adminGet<T>(gatewayUrl: string, adminToken: string, path: string): Promise<T> {
  const res = await fetch(`${gatewayUrl}/admin/v1${path}`, {
    headers: { authorization: `Bearer ${adminToken}` },
    signal: AbortSignal.timeout(30_000),
  });
  if (!res.ok) throw new Error(`GET /admin/v1${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Every page of a keyset-paginated admin list. */
async function adminPages<T>(
  gatewayUrl: string,
  adminToken: string,
  path: string,
  key: string,
  pageSize: number,
) {
  const all: T[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const at: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
    const page: Record<string, unknown> = await adminGet(
      gatewayUrl,
      adminToken,
      `${path}${sep}limit=${pageSize}${at}`,
    );
    all.push(...(page[key] as T[]));
    cursor = page.next_cursor as string | null;
  } while (cursor !== null);
  return all;
}

/** The gateway's side through its admin audit reads (the admin token only), `pageSize` rows a request. */
export async function readGatewayByAdminApi(
  gatewayUrl: string,
  adminToken: string,
  pageSize = PAGE,
): Promise<GatewayView> {
  const get = <T>(path: string, key: string) => adminPages<T>(gatewayUrl, adminToken, path, key, pageSize);
  const [operations, clearing, shops, terminalDeliveries, pending, health] = await Promise.all([
    get<GatewayOperation>("/audit/operations", "operations"),
    get<OperationClearing>("/audit/ledger/operations", "operations"),
    get<ShopTotal>("/audit/ledger/shops", "totals"),
    get<TerminalDelivery>("/audit/webhook-deliveries?terminal=true", "deliveries"),
    get<TerminalDelivery>("/audit/webhook-deliveries?status=pending", "deliveries"),
    adminGet<{
      services: {
        service: string;
        outbox_total: number;
        outbox_unpublished: number;
        unpublished_event_ids: string[];
        consumers: { durable: string; pending: number; ack_pending: number }[];
      }[];
    }>(gatewayUrl, adminToken, "/audit/events"),
  ]);
  const unsettled: GatewayView["unsettled"] = [];
  for (const s of health.services) {
    for (const id of s.unpublished_event_ids)
      unsettled.push({ why: `${s.service} outbox unpublished`, event_id: id });
    const unlisted = s.outbox_unpublished - s.unpublished_event_ids.length;
    if (unlisted > 0) unsettled.push({ why: `${s.service} outbox unpublished, not listed`, n: unlisted });
    for (const c of s.consumers)
      if (c.pending + c.ack_pending > 0)
        unsettled.push({ why: `not applied by ${c.durable}`, n: c.pending + c.ack_pending });
  }
  for (const d of pending) unsettled.push({ why: "webhook delivery still pending", event_id: d.event_id });
  return {
    operations,
    clearing,
    shops,
    unsettled,
    events: health.services.reduce((n, s) => n + s.outbox_total, 0),
    terminalDeliveries,
  };
}

/**
 * The gateway's side with selects, for `--tamper` only: the self-test corrupts state
 * inside a transaction and the checker must read through that same transaction, which
 * no admin API can. Events are checked by comparing each consumer's inbox with the
 * outbox it reads (JetStream's counts cannot see a transaction).
 */
export async function readGatewayBySql(sql: postgres.Sql): Promise<GatewayView> {
  const operations = await sql<GatewayOperation[]>`
    select id::text, shop_id::text, type, status, provider, currency, actual_amount::text,
           request_hash is null as placeholder
    from operations.operations`;
  const clearing = await sql<OperationClearing[]>`
    select t.operation_id::text, a.owner as shop_id, p.currency,
           sum(case when p.side = 'debit' then p.amount else -p.amount end)::text as booked,
           coalesce(sum(case when p.side = 'debit' then p.amount else -p.amount end)
             filter (where t.kind in ('payment_settle', 'payout_complete')), 0)::text as booked_on_completion,
           (select count(*)::int from ledger.transfers c
             where c.operation_id = t.operation_id and c.kind = 'payout_complete') as payout_completes
    from ledger.postings p
    join ledger.accounts a on a.id = p.account_id
    join ledger.transfers t on t.id = p.transfer_id
    where a.kind = 'provider_clearing' and t.operation_id is not null
    group by t.operation_id, a.owner, p.currency
    union all
    select operation_id::text, min(shop_id), null, '0', '0', count(*)::int from ledger.transfers
    where kind = 'payout_complete' group by operation_id having count(*) > 1`;
  const shops = await sql<ShopTotal[]>`
    select a.owner as shop_id, a.currency, sum(a.balance)::text as accounts_sum,
           coalesce((select sum(case when p.side = 'debit' then p.amount else -p.amount end)
                     from ledger.postings p join ledger.accounts c on c.id = p.account_id
                     where c.owner = a.owner and c.currency = a.currency and c.kind = 'provider_clearing'), 0)::text
             as provider_clearing
    from ledger.accounts a group by 1, 2`;
  const unsettled = [
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
    ...(await poolPayinsUnapplied(sql)),
    ...(await sql`select 'not applied by operations-pool-payouts' as why, e.id::text as event_id from matching.outbox e
                  where e.subject ~ ${subjectsRegex(CONSUMER_SUBJECTS["operations-pool-payouts"])} and not exists
                    (select 1 from operations.inbox i where i.consumer = 'operations-pool-payouts' and i.event_id = e.id)`),
    ...(await sql`select 'webhook delivery still pending' as why, event_id::text from webhooks.deliveries where status = 'pending'`),
  ].map((r) => ({ why: String(r.why), event_id: String(r.event_id) }));
  const [events] = await sql<{ n: number }[]>`
    select ((select count(*) from operations.outbox) + (select count(*) from ledger.outbox)
          + (select count(*) from matching.outbox) + (select count(*) from receipts.outbox))::int as n`;
  const terminalDeliveries = await sql<TerminalDelivery[]>`
    select event_id::text, event_type, operation_id::text, status from webhooks.deliveries
    where event_type ~ '\\.(completed|rejected|cancelled|expired)$'`;
  return { operations, clearing, shops, unsettled, events: events?.n ?? 0, terminalDeliveries };
}

/** Runs the six invariants and returns what each examined and found. */
export async function checkConservation(input: ConservationInput): Promise<InvariantResult[]> {
  const { gateway, books, lists } = input;
  const ops = gateway.operations;
  const byId = new Map(ops.map((o) => [o.id, o]));
  // A create the gateway refused (`no_provider_accepted`): rejected without a provider.
  const refused = (o: GatewayOperation) => !o.placeholder && o.status === "rejected" && o.provider === null;
  // Whether the merchant was told of it: a placeholder and a refused create never were.
  const known = (o: GatewayOperation) => !o.placeholder && !refused(o);
  const facts = lists.providerFacts ?? [];
  const factFor = (reference: string, provider: string) =>
    facts.some((f) => f.operation_id === reference && f.provider === provider);
  const add = (m: Map<string, Decimal>, k: string, v: Decimal) =>
    m.set(k, (m.get(k) ?? new Decimal(0)).plus(v));

  // --- money ----------------------------------------------------------------------
  const providerSide = new Map<string, Decimal>();
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
  // gross and credited by a payout's outflow. The pool's own completions are left out:
  // the pool is no provider with books here (its payer pays its payout's recipient directly).
  const ledgerSide = new Map<string, Decimal>();
  for (const t of gateway.shops)
    add(ledgerSide, `${t.shop_id} ${t.currency}`, new Decimal(t.provider_clearing));
  const bookedFor = new Map<string, Decimal>();
  for (const c of gateway.clearing) {
    if (c.currency === null) continue;
    add(bookedFor, c.operation_id, new Decimal(c.booked));
    if (byId.get(c.operation_id)?.provider === POOL)
      add(ledgerSide, `${c.shop_id} ${c.currency}`, new Decimal(c.booked_on_completion).neg());
  }
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
  for (const t of gateway.shops)
    if (!new Decimal(t.accounts_sum).isZero())
      moneyViolations.push({
        why: "the shop's accounts do not sum to zero",
        shop_id: t.shop_id,
        currency: t.currency,
        sum: t.accounts_sum,
      });

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
  const twice = new Set(gateway.clearing.filter((c) => c.payout_completes > 1).map((c) => c.operation_id));
  for (const id of twice)
    payoutViolations.push({ why: "payout completed twice in the ledger", operation_id: id });
  const payoutsExamined = ops.filter((o) => o.type === "payout").length;

  // --- payout_one_provider -----------------------------------------------------------
  const liveAt = new Map<string, string[]>();
  for (const r of books.references)
    if (
      r.direction === "payout" &&
      r.decision === "accepted" &&
      (r.status === "pending" || r.status === "completed")
    )
      liveAt.set(r.reference, [...(liveAt.get(r.reference) ?? []), `${r.provider}:${r.status}`]);
  const liveViolations: unknown[] = [];
  for (const [reference, at] of liveAt)
    if (at.length > 1) liveViolations.push({ reference, live_or_paid_at: at });

  // --- status_agrees and provider_closed -------------------------------------------
  const held = new Map<string, Books["references"]>();
  for (const r of books.references) held.set(r.reference, [...(held.get(r.reference) ?? []), r]);
  const statusViolations: unknown[] = [];
  const openViolations: unknown[] = [];
  let ended = 0;
  for (const op of ops) {
    const holders = held.get(op.id) ?? [];
    const own = op.provider ? holders.find((h) => h.provider === op.provider) : undefined;
    if (op.provider && op.provider !== POOL && known(op)) {
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
    // A create refused or rejected: every provider it was passed over at (accepted there,
    // then withdrawn) must be closed too, or, if that provider completed it, the
    // completion must be on the operator's list (and booked on suspense).
    if (op.status === "rejected" && !op.placeholder) {
      const passedOver = holders.filter((h) => h.provider !== op.provider);
      if (refused(op) && passedOver.length > 0) ended++;
      for (const h of passedOver) {
        if (h.status === "pending")
          openViolations.push({
            id: op.id,
            why: "rejected, but a provider it was passed over at still holds it open",
            provider: h.provider,
          });
        if (h.status === "completed" && !factFor(op.id, h.provider))
          openViolations.push({
            id: op.id,
            why: "rejected, a provider it was passed over at completed it, and it is not on the provider-facts list",
            provider: h.provider,
          });
      }
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
  const excused = (eventId: string | undefined) => {
    const d = eventId === undefined ? undefined : dead.get(eventId);
    return d !== undefined && d.error.trim() !== "";
  };
  const stuck = [
    ...gateway.unsettled,
    ...ops
      .filter((o) => o.status === "routing")
      .map((o) => ({ why: "create still routing", event_id: o.id })),
  ].filter((r) => !excused(r.event_id));
  const deadWithoutReason = (lists.deadLetters ?? []).filter((d) => d.error.trim() === "");

  // --- webhooks_once --------------------------------------------------------------
  const deliveredFor = new Map<string, { event_ids: string[]; states: string[] }>();
  for (const d of gateway.terminalDeliveries) {
    const key = `${d.operation_id} ${d.event_type}`;
    const prev = deliveredFor.get(key) ?? { event_ids: [], states: [] };
    deliveredFor.set(key, { event_ids: [...prev.event_ids, d.event_id], states: [...prev.states, d.status] });
  }
  const webhookViolations: unknown[] = [];
  const terminalOps = ops.filter((o) => known(o) && TERMINAL.has(o.status));
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
  for (const key of deliveredFor.keys()) {
    const [operationId = "", eventType] = key.split(" ");
    const op = byId.get(operationId);
    if (op && `${op.type}.${op.status}` !== eventType)
      webhookViolations.push({ id: operationId, why: `sent ${eventType}, but it is ${op.status}` });
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
      id: "payout_one_provider",
      name: "no payout live (pending) or paid (completed) at two providers",
      examined: payoutsExamined,
      violations: liveViolations,
    },
    {
      id: "status_agrees",
      name: "every operation's final status agrees with its providers' final facts; unexpected facts listed",
      examined: ops.length,
      violations: statusViolations,
    },
    {
      id: "provider_closed",
      name: "every operation the gateway ended (refused creates' passed-over providers too) is closed at the provider (withdrawn or final)",
      examined: ended,
      violations: openViolations,
    },
    {
      id: "events_settled",
      name: "no event unpublished or unapplied after quiescence unless dead-lettered with a reason",
      examined: gateway.events,
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

type Tamper = (tx: postgres.TransactionSql) => Promise<{ count: number }>;

/**
 * Corrupts what each invariant guards, for `--tamper` (the stack stopped, triggers off,
 * inside the caller's transaction); returns the rows changed.
 */
const TAMPER: Record<InvariantId, Tamper> = {
  // One kopeck more on one leg of a completed payin: the provider reports more than was booked.
  money: (tx) => tx`update sandbox.legs set amount = amount + 0.01 where id = (
      select l.id from sandbox.legs l join sandbox.operations o on o.id = l.operation_id
      where o.direction = 'payin' and o.status = 'completed' limit 1)`,
  // A completed payout is paid a second time by another provider.
  payout_one_provider: async (tx) => {
    // A payout taken by a second provider while its first still holds it pending.
    await tx`insert into sandbox.providers (name, credentials, payin, payout)
             values ('tamper-live', 'tamper-credentials-0001', '{"mode":"accept"}', '{"mode":"accept"}')
             on conflict do nothing`;
    return tx`insert into sandbox.operations (id, provider, reference, direction, method, amount, currency,
                callback_url, decision, status)
              select gen_random_uuid(), 'tamper-live', reference, direction, method, amount, currency,
                callback_url, 'accepted', 'pending'
              from sandbox.operations where direction = 'payout' and status in ('pending', 'completed')
                and decision = 'accepted' limit 1`;
  },
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

/**
 * The tamper self-test's cases: one per invariant, and one more for `provider_closed`'s
 * refused creates. Each must be reported broken by the invariant it names.
 */
export const TAMPER_CASES: { id: InvariantId; name: string; tamper: Tamper }[] = [
  ...INVARIANTS.map((id) => ({ id, name: id, tamper: TAMPER[id] })),
  {
    id: "events_settled",
    name: "events_settled (pool payins: applied event lost)",
    // An event the pool's payins consumer applied, as if it never had.
    tamper: (tx) => tx`delete from operations.inbox where consumer = 'operations-pool-payins'
      and event_id = (select event_id from operations.inbox where consumer = 'operations-pool-payins' limit 1)`,
  },
  {
    id: "events_settled",
    name: "events_settled (pool payins: skip the operation does not confirm)",
    // The pool put on the route of a payin taken by a provider without being asked: its
    // skipped first event no longer counts as rightly skipped.
    tamper: (tx) => tx`update operations.routes r set payin = r.payin || ${POOL}::text
      where (r.shop_id, r.method) = (select op.shop_id, op.method from operations.operations op
        join operations.routes w on w.shop_id = op.shop_id and w.method = op.method
        where op.type = 'payment' and op.provider is not null and op.provider <> ${POOL}
          and not (${POOL} = any(op.routing_passed)) and not (${POOL} = any(w.payin)) limit 1)`,
  },
  {
    id: "provider_closed",
    name: "provider_closed (refused create)",
    // A create the gateway refused (`no_provider_accepted`) still open at a provider it was
    // passed over at: such a row reopened; or, when the run left none, one added for a
    // refused create (made from another operation's row when the run refused none).
    tamper: async (tx) => {
      const reopened =
        await tx`update sandbox.operations set status = 'pending', settled_at = null where id = (
          select s.id from sandbox.operations s join operations.operations op on op.id::text = s.reference
          where op.status = 'rejected' and op.provider is null and op.request_hash is not null limit 1)`;
      if (reopened.count > 0) return reopened;
      await tx`insert into operations.operations (id, shop_id, merchant_id, merchant_operation_id, request_hash,
                 type, status, method, currency, expected_amount)
               select gen_random_uuid(), shop_id, merchant_id, merchant_operation_id || ':tamper-refused',
                 request_hash, type, 'rejected', method, currency, expected_amount
               from operations.operations
               where request_hash is not null and provider is not null and provider <> ${POOL}
                 and not exists (select 1 from operations.operations r
                   where r.status = 'rejected' and r.provider is null and r.request_hash is not null)
               limit 1`;
      return tx`insert into sandbox.operations (id, provider, reference, direction, method, amount, currency,
                  callback_url, decision, status)
                select gen_random_uuid(), t.provider, op.id::text,
                  case when op.type = 'payment' then 'payin' else 'payout' end, t.method,
                  coalesce(op.expected_amount, 100), coalesce(op.currency, t.currency), t.callback_url,
                  'accepted', 'pending'
                from (select * from operations.operations
                      where status = 'rejected' and provider is null and request_hash is not null limit 1) op,
                     (select * from sandbox.operations limit 1) t`;
    },
  },
];

class RolledBack extends Error {
  override readonly name = "RolledBack";
}

/** What one tamper case came to. */
export interface TamperOutcome {
  id: InvariantId;
  name: string;
  outcome: "reported BROKEN" | "NOT reported" | "nothing to corrupt";
}

/**
 * The checker's self-test: each of `TAMPER_CASES` corrupts what its invariant guards
 * inside a transaction (triggers off), the checker reads through that transaction
 * (`readGatewayBySql`, the sandbox's books with the same selects) and must report the
 * invariant broken; then the transaction is rolled back, so nothing is left changed.
 */
export async function tamperSelfTest(
  sql: postgres.Sql,
  received?: ReadonlyMap<string, number>,
): Promise<TamperOutcome[]> {
  const outcomes: TamperOutcome[] = [];
  for (const { id, name, tamper } of TAMPER_CASES) {
    let outcome: TamperOutcome["outcome"] = "nothing to corrupt";
    await sql
      .begin(async (tx) => {
        await tx`set local session_replication_role = replica`;
        const { count } = await tamper(tx);
        if (count > 0) {
          const read = tx as unknown as postgres.Sql;
          const results = await checkConservation({
            gateway: await readGatewayBySql(read),
            books: await sandboxBooks(read),
            lists: {},
            received,
          });
          outcome = results.find((r) => r.id === id)?.violations.length ? "reported BROKEN" : "NOT reported";
        }
        throw new RolledBack();
      })
      .catch((err) => {
        if (!(err instanceof RolledBack)) throw err;
      });
    outcomes.push({ id, name, outcome });
  }
  return outcomes;
}

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
