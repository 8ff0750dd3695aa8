import type { OperationEvent } from "@gw/proto/gateway/operations/v1/operations_pb";

/**
 * The subjects (without the events prefix) each durable consumer of the gateway reads:
 * exactly the events its handler acts on. A consumer is never handed the others, so an
 * event nobody acts on costs no inbox transaction anywhere (`payment.pending`, the
 * commonest, reaches only the pool's payins consumer, which releases a slot the pool may
 * hold for a payin another provider took). The services start their consumers with these
 * lists, and the fault suite and the conservation checker expect an event in a
 * consumer's inbox if and only if its subject is on that consumer's list, except the
 * events the pool's payins consumer skips (`poolPayinsSkip`).
 */
export const CONSUMER_SUBJECTS = {
  /**
   * Ledger postings: settled payments, and a payout's reserve, payment and release (a
   * refused payout create's internal `payout.refused` releases the reserve posted before
   * its routing).
   */
  ledger: [
    "operations.payment.completed",
    "operations.payout.pending",
    "operations.payout.completed",
    "operations.payout.rejected",
    "operations.payout.cancelled",
    "operations.payout.refused",
  ],
  /** Provider facts the ledger books to suspense. */
  "ledger-provider-facts": ["provider_facts.>"],
  /**
   * Merchant webhooks: entry into `awaiting_confirmation`, and every terminal or review
   * status (`payment.pending` and `payout.pending` are not delivered: the create
   * response already told the merchant).
   */
  webhooks: [
    "operations.payment.awaiting_confirmation",
    "operations.payment.completed",
    "operations.payment.rejected",
    "operations.payment.cancelled",
    "operations.payment.manual_check",
    "operations.payout.completed",
    "operations.payout.rejected",
  ],
  /**
   * The pool: completed, rejected and cancelled payments confirm or free their slots (a
   * cancelled one's withdrawal frees it too; this consumer dead-letters where that driver
   * gives up); the first event of a payin (pending, awaiting confirmation) frees a slot
   * the pool holds for a payin another provider took, and a refused payin create's
   * internal `payment.refused` one its late Admit left. A first event whose create states
   * that the pool cannot hold a slot for it is acked without an inbox row
   * (`poolPayinsSkip`).
   */
  "operations-pool-payins": [
    "operations.payment.pending",
    "operations.payment.awaiting_confirmation",
    "operations.payment.completed",
    "operations.payment.rejected",
    "operations.payment.cancelled",
    "operations.payment.refused",
  ],
  /** The pool: matching's payout events. */
  "operations-pool-payouts": ["matching.pool_payout.>"],
  /** The pool: payouts recorded pending enter it. */
  "operations-pool-entries": ["operations.payout.pending"],
  /** Withdrawals of the money of cancelled payments. */
  "operations-withdrawals": ["operations.payment.cancelled"],
} as const satisfies Record<string, readonly string[]>;

/** The first events of a payin: the ones `poolPayinsSkip` may skip. */
const ROUTED_PAYMENT_TYPES = new Set(["payment.pending", "payment.awaiting_confirmation"]);

/**
 * Whether `operations-pool-payins` acks an operation event as it is, without a transaction
 * or an inbox row: a payin's first event (pending, awaiting confirmation) whose create
 * stated that the pool cannot hold a slot for it (`pool_may_hold_slot` false: the pool was
 * neither on the route it took, nor passed over, nor its provider, so it was never asked).
 * Its handler would only release such a slot. An event without the statement (an older
 * producer's, or any other) is applied. The fault suite exempts exactly these from the
 * consumer's inbox, once the operation confirms them.
 */
export function poolPayinsSkip(event: Pick<OperationEvent, "type" | "poolMayHoldSlot">): boolean {
  return event.poolMayHoldSlot === false && ROUTED_PAYMENT_TYPES.has(event.type);
}

/** Whether a subject matches a NATS filter (`*` one token, `>` one or more trailing tokens). */
export function subjectMatches(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return s.length > i;
    if (i >= s.length || (f[i] !== "*" && f[i] !== s[i])) return false;
  }
  return f.length === s.length;
}

/**
 * A POSIX regular expression (Postgres `~`) that matches a full subject, whatever its
 * events prefix, when it is on `subjects`: for SQL that compares outbox and inbox.
 */
export function subjectsRegex(subjects: readonly string[]): string {
  const one = (s: string) =>
    s
      .split(".")
      .map((t) => (t === ">" ? ".+" : t === "*" ? "[^.]+" : t.replace(/[^A-Za-z0-9_]/g, "\\$&")))
      .join("\\.");
  return `(^|\\.)(${subjects.map(one).join("|")})$`;
}
