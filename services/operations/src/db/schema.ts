import { deadLetterTable, inboxTable, outboxTable } from "@gw/db";
import { sql } from "drizzle-orm";
import {
  type AnyPgColumn,
  bigint,
  boolean,
  check,
  index,
  integer,
  numeric,
  pgSchema,
  primaryKey,
  text,
  timestamp,
  unique,
  uuid,
} from "drizzle-orm/pg-core";

import {
  FACT_DIRECTIONS,
  FACT_KINDS,
  FACT_RESOLUTIONS,
  FACT_STATES,
  HANDOFF_STATES,
  LINK_STATES,
  OPERATION_STATUSES,
  OPERATION_TYPES,
  WITHDRAWAL_STATES,
} from "./values.ts";

/**
 * The `CHECK` of a status column: one of the states of its table (the lifecycle's, or a
 * side machine's in src/domain/), so a status no table has can never be stored, whoever
 * writes it; the same for the other value sets (an operation's type, a fact's kind). The
 * values are identifiers (`[a-z_]+`), quoted as literals.
 */
const oneOf = (column: AnyPgColumn, values: readonly string[]) => {
  if (!values.every((s) => /^[a-z_]+$/.test(s))) throw new Error(`not a value name: ${values.join(", ")}`);
  return sql`${column} in (${sql.raw(values.map((s) => `'${s}'`).join(", "))})`;
};

/** The operations service owns this schema; no other service reads or writes it. */
export const operations = pgSchema("operations");

/** Providers registered through the admin API. `credentials` is a secret: never logged or returned. */
export const providers = operations.table("providers", {
  name: text("name").primaryKey(),
  kind: text("kind").notNull(),
  baseUrl: text("base_url").notNull(),
  credentials: text("credentials").notNull(),
  methods: text("methods").array().notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/**
 * One row: the version of the routing configuration (`routes` and `providers`), raised by
 * a statement trigger on every write to either table, whoever writes (migration 0015). A
 * create that routes by a cached configuration claims its key only while this is the
 * version it was read at (`OperationStore.claim`), so a lost or late cache invalidation
 * can never route a create by a configuration changed before it began.
 */
export const configVersion = operations.table(
  "config_version",
  {
    one: boolean("one").primaryKey().default(true),
    version: bigint("version", { mode: "bigint" }).notNull().default(sql`0`),
  },
  (t) => [check("config_version_one_row", sql`${t.one}`)],
);

/** A shop's ordered provider lists per method and direction; `self_matching` names the pool. */
export const routes = operations.table(
  "routes",
  {
    shopId: uuid("shop_id").notNull(),
    method: text("method").notNull(),
    payin: text("payin").array().notNull(),
    payout: text("payout").array().notNull(),
    settlementCurrency: text("settlement_currency").notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.shopId, t.method] })],
);

/**
 * One row per (shop, merchant_operation_id): the unique constraint settles idempotency
 * and the create/cancel race. `status` adds two internal values to the public ones:
 * `routing` (create in flight; reads answer 404) and nothing else. A row with a null
 * `request_hash` is a cancel that arrived before its create (a placeholder).
 */
export const operationsTable = operations.table(
  "operations",
  {
    id: uuid("id").primaryKey(),
    shopId: uuid("shop_id").notNull(),
    merchantId: uuid("merchant_id").notNull(),
    merchantOperationId: text("merchant_operation_id").notNull(),
    requestHash: text("request_hash"),
    type: text("type").notNull(),
    status: text("status").notNull(),
    method: text("method"),
    currency: text("currency"),
    expectedAmount: numeric("expected_amount", { precision: 20, scale: 2 }),
    actualAmount: numeric("actual_amount", { precision: 20, scale: 2 }).notNull().default("0"),
    clientId: text("client_id"),
    clientIp: text("client_ip"),
    number: text("number"),
    name: text("name"),
    bankname: text("bankname"),
    provider: text("provider"),
    receiptRequired: boolean("receipt_required").notNull().default(false),
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    settlementCurrency: text("settlement_currency"),
    fxRate: numeric("fx_rate", { precision: 30, scale: 12 }),
    fxSource: text("fx_source"),
    commissionPercent: numeric("commission_percent", { precision: 9, scale: 4 }),
    commissionFixed: numeric("commission_fixed", { precision: 20, scale: 6 }),
    /**
     * The ledger's pricing version the quote's terms were read at (`GetPricingTerms`):
     * which pricing and rate priced this operation. Null for rows created before it was
     * recorded, or quoted by the ledger's Quote (an amount the local quote does not take).
     */
    pricingVersion: bigint("pricing_version", { mode: "number" }),
    manualCheckReason: text("manual_check_reason"),
    /**
     * Set when a payer's receipt went to the receipts service, cleared by its verdict (or
     * by the reconciler once that review is over without one): while set, the payment does
     * not expire and keeps its pool slot (docs/architecture.md, "Self-matching pool").
     */
    reviewStartedAt: timestamp("review_started_at", { withTimezone: true }),
    /** Created through a link whose shop had the hosted page on: the payer's page may show it. */
    hostedPage: boolean("hosted_page").notNull().default(false),
    cancelRequested: boolean("cancel_requested").notNull().default(false),
    cancelledByCommand: boolean("cancelled_by_command").notNull().default(false),
    cancelReason: text("cancel_reason"),
    routingDeadline: timestamp("routing_deadline", { withTimezone: true }),
    /**
     * The cascade's position, so a retried create or the reconciler goes on where the last
     * driver stopped instead of at the first provider: the providers that gave a definite
     * "no" (declined, never received, withdrawn), and the one whose answer is unknown and
     * must be resolved by asking its status before anyone else is asked (payouts).
     */
    routingPassed: text("routing_passed").array().notNull().default(sql`'{}'::text[]`),
    routingUnresolved: text("routing_unresolved"),
    /**
     * Reconciler bookkeeping, never part of the operation's state (written without a
     * version bump): when the reconciler looks at the row next (also its lease while it
     * does), how many times it asked the provider, and when it raised the stuck alert.
     */
    nextCheckAt: timestamp("next_check_at", { withTimezone: true }),
    reconcileChecks: integer("reconcile_checks").notNull().default(0),
    stuckAlertedAt: timestamp("stuck_alerted_at", { withTimezone: true }),
    /**
     * When a payout whose provider's answer stayed unknown past PAYOUT_OPERATOR_HORIZON_MS
     * went to the operator queue (Reconciler): a person decides with the provider's
     * evidence. Bookkeeping like the columns above, never part of the operation's state.
     */
    operatorQueuedAt: timestamp("operator_queued_at", { withTimezone: true }),
    version: bigint("version", { mode: "number" }).notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique("operations_shop_mop").on(t.shopId, t.merchantOperationId),
    // Operators find an operation by the merchant's id whatever its shop.
    index("operations_mop").on(t.merchantOperationId),
    index("operations_open")
      .on(t.status, t.updatedAt)
      .where(sql`status in ('routing', 'pending', 'awaiting_confirmation')`),
    check("operations_amounts", sql`actual_amount >= 0 and (expected_amount is null or expected_amount > 0)`),
    check("operations_status", oneOf(t.status, OPERATION_STATUSES)),
    check("operations_type", oneOf(t.type, OPERATION_TYPES)),
  ],
);

/** Completed physical parts of an operation as reported by its provider, or proven by a receipt. */
export const legs = operations.table(
  "legs",
  {
    id: uuid("id").primaryKey(),
    operationId: uuid("operation_id")
      .notNull()
      .references(() => operationsTable.id),
    provider: text("provider").notNull(),
    providerLegId: text("provider_leg_id").notNull(),
    amount: numeric("amount", { precision: 20, scale: 2 }).notNull(),
    completedAt: timestamp("completed_at", { withTimezone: true }).notNull(),
    /** The receipts service's id of the reviewed receipt proving this leg (receipt-confirmed payments). */
    receiptId: uuid("receipt_id"),
  },
  (t) => [
    unique("legs_provider_leg").on(t.operationId, t.providerLegId),
    check("legs_positive", sql`amount > 0`),
  ],
);

/** Provider callbacks already applied: a replay of the same callback changes nothing. */
export const callbacks = operations.table(
  "callbacks",
  {
    provider: text("provider").notNull(),
    callbackId: text("callback_id").notNull(),
    operationId: uuid("operation_id").notNull(),
    receivedAt: timestamp("received_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.provider, t.callbackId] })],
);

/**
 * Flexible payment links (`POST /v1/payment/link/flexible`), keyed by the operation id
 * derived from (shop, merchant_operation_id): the id the payment gets once an amount is
 * confirmed. `k_hash` is the sha256 of the page credential; the credential itself is
 * never stored (it is an HMAC of the id, so a retry can answer the same URL).
 */
export const flexibleLinks = operations.table(
  "flexible_links",
  {
    operationId: uuid("operation_id").primaryKey(),
    shopId: uuid("shop_id").notNull(),
    merchantId: uuid("merchant_id").notNull(),
    merchantOperationId: text("merchant_operation_id").notNull(),
    requestHash: text("request_hash").notNull(),
    clientId: text("client_id").notNull(),
    clientIp: text("client_ip"),
    method: text("method").notNull(),
    currency: text("currency").notNull(),
    recommendedAmount: numeric("recommended_amount", { precision: 20, scale: 2 }).notNull(),
    minAmount: numeric("min_amount", { precision: 20, scale: 2 }),
    maxAmount: numeric("max_amount", { precision: 20, scale: 2 }),
    picker: text("picker").notNull(),
    kHash: text("k_hash").notNull(),
    /**
     * deciding (written, not decided yet: an attempt failed or is under way) |
     * amount_selection | created | rejected (expired is amount_selection past expires_at):
     * `LINK_MACHINE`.
     */
    status: text("status").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    /**
     * The attempt deciding the link now (a create's decision, a payer's confirmation),
     * which calls matching with no lock held: its token, and the end of its claim by the
     * database's clock. Null when nobody decides it; a claim past its end (its process
     * died) is taken by the next attempt.
     */
    claim: uuid("claim"),
    claimedUntil: timestamp("claimed_until", { withTimezone: true }),
    /**
     * When the reconciler released the pool slot an undecided link's attempt may have left
     * (no payment row was written); a new claim clears it, since that attempt may admit again.
     */
    slotReleasedAt: timestamp("slot_released_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique("flexible_links_shop_mop").on(t.shopId, t.merchantOperationId),
    check("flexible_links_status", oneOf(t.status, LINK_STATES)),
  ],
);

export const outbox = outboxTable(operations);
export const inbox = inboxTable(operations);

/**
 * The hand-off of a pool payout's remainder (docs/architecture.md, "Self-matching pool"):
 * decided in the consumer's transaction (the remainder and the providers to ask, in
 * route order), then driven outside any transaction by `HandOffDriver`, one provider at
 * a time (`position`), with bounded retries (`attempts`, `next_attempt_at`).
 */
export const poolHandoffs = operations.table(
  "pool_handoffs",
  {
    operationId: uuid("operation_id").primaryKey(),
    amount: numeric("amount", { precision: 20, scale: 2 }).notNull(),
    /** Provider names after `self_matching` in the payout route when the window ended. */
    candidates: text("candidates").array().notNull(),
    /** The candidate being asked. */
    position: integer("position").notNull().default(0),
    /** Unanswered asks of the candidate at `position`. */
    attempts: integer("attempts").notNull().default(0),
    /**
     * asking | accepted (by `provider`) | exhausted (nobody took it) | superseded (settled
     * meanwhile by another path): `HANDOFF_MACHINE`.
     */
    status: text("status").notNull().default("asking"),
    provider: text("provider"),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }).notNull().defaultNow(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("pool_handoffs_due").on(t.nextAttemptAt).where(sql`status = 'asking'`),
    check("pool_handoffs_status", oneOf(t.status, HANDOFF_STATES)),
  ],
);

/** Events a consumer of this service could not apply after its attempts (libs/events, dead letters). */
export const deadLetters = deadLetterTable(operations);
/**
 * Provider facts (src/provider-facts.ts): money a provider moved that the gateway did not
 * expect, recorded beside the operation (whose status it never changes), booked on
 * suspense by the ledger and resolved once by an operator. `fact_key` names the callback
 * or legs it came from, so the same fact reported twice (a replayed callback, the same
 * result read again by the reconciler) is recorded once per provider and reference.
 */
export const providerFacts = operations.table(
  "provider_facts",
  {
    id: uuid("id").primaryKey(),
    provider: text("provider").notNull(),
    /** The provider's reference: our operation id, also when we hold no such operation. */
    reference: text("reference").notNull(),
    factKey: text("fact_key").notNull(),
    operationId: uuid("operation_id"),
    shopId: uuid("shop_id"),
    merchantId: uuid("merchant_id"),
    /** late_completion | not_routed | slot_refused | amount_mismatch */
    kind: text("kind").notNull(),
    providerStatus: text("provider_status").notNull(),
    /** payin | payout: which way the money moved at the provider. */
    direction: text("direction").notNull(),
    /**
     * Null when the provider did not say how much (a completion without legs of an
     * operation we do not hold) or which currency (a provider we hold no configuration
     * of): the fact is still listed for an operator, and only what is known is booked.
     */
    amount: numeric("amount", { precision: 20, scale: 2 }),
    currency: text("currency"),
    /** open | resolved: `FACT_MACHINE`. */
    status: text("status").notNull().default("open"),
    /** credit_shop | return_to_payer | debit_shop | write_off, with the operator and the reason: the audit record. */
    resolution: text("resolution"),
    resolvedBy: text("resolved_by"),
    resolutionReason: text("resolution_reason"),
    settlementAmount: numeric("settlement_amount", { precision: 20, scale: 6 }),
    commissionAmount: numeric("commission_amount", { precision: 20, scale: 6 }),
    settlementCurrency: text("settlement_currency"),
    resolvedAt: timestamp("resolved_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique("provider_facts_source").on(t.provider, t.reference, t.factKey),
    index("provider_facts_open").on(t.status, t.createdAt),
    check("provider_facts_amount", sql`amount is null or amount > 0`),
    check("provider_facts_status", oneOf(t.status, FACT_STATES)),
    check("provider_facts_kind", oneOf(t.kind, FACT_KINDS)),
    check("provider_facts_direction", oneOf(t.direction, FACT_DIRECTIONS)),
    check(
      "provider_facts_resolution",
      sql`${t.resolution} is null or ${oneOf(t.resolution, FACT_RESOLUTIONS)}`,
    ),
  ],
);

/**
 * Withdrawals of payments at a provider (src/withdrawals.ts): one row per operation and
 * provider, written from the committed `payment.cancelled` event (the provider holding
 * it), or by the create in the transaction that passes a provider over whose answer to
 * a payin was unknown (`passed_over`), and driven outside any transaction with backoff
 * until the provider answers for good.
 */
export const withdrawals = operations.table(
  "withdrawals",
  {
    operationId: uuid("operation_id").notNull(),
    provider: text("provider").notNull(),
    /** Written by a create that passed this provider over (not by a cancel). */
    passedOver: boolean("passed_over").notNull().default(false),
    /**
     * asking | withdrawn | not_found | final | not_supported | gave_up | held (passed over,
     * then that provider's): `WITHDRAWAL_MACHINE`.
     */
    status: text("status").notNull().default("asking"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }).notNull().defaultNow(),
    lastError: text("last_error"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.operationId, t.provider] }),
    index("withdrawals_due").on(t.nextAttemptAt).where(sql`status = 'asking'`),
    check("withdrawals_status", oneOf(t.status, WITHDRAWAL_STATES)),
  ],
);

/**
 * How the payer's page presents a shop (`PutShopPage`): the name a payer is shown and the
 * link back to the shop. Set by an operator through the edge's shop settings; read by
 * `GetPaymentPage`.
 */
export const shopPages = operations.table("shop_pages", {
  shopId: uuid("shop_id").primaryKey(),
  displayName: text("display_name"),
  returnUrl: text("return_url"),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});
