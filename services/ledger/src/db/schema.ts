import { deadLetterTable, inboxTable, outboxTable } from "@gw/db";
import { sql } from "drizzle-orm";
import {
  bigint,
  bigserial,
  check,
  foreignKey,
  index,
  jsonb,
  numeric,
  pgSchema,
  primaryKey,
  smallint,
  text,
  timestamp,
  unique,
  uuid,
} from "drizzle-orm/pg-core";

/** The ledger service owns this schema; no other service reads or writes it. */
export const ledger = pgSchema("ledger");

/**
 * One account per (owner, currency, kind). The owner is the shop the account belongs
 * to or tracks: the house accounts (commission revenue, provider clearing, FX
 * conversion, adjustments) are kept per shop too, so that no single row is locked by
 * every transfer of every shop. `balance` is credits minus debits of the account's
 * postings, updated in the same transaction as the postings.
 */
export const accounts = ledger.table(
  "accounts",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    owner: text("owner").notNull(),
    currency: text("currency").notNull(),
    kind: text("kind").notNull(),
    balance: numeric("balance").notNull().default("0"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique("accounts_owner_currency_kind").on(t.owner, t.currency, t.kind),
    // Lets postings reference (id, currency), so a posting can never be in another currency than its account.
    unique("accounts_id_currency").on(t.id, t.currency),
    check(
      "accounts_kind",
      sql`${t.kind} in ('available', 'reserved', 'commission_revenue', 'provider_clearing', 'fx_conversion', 'adjustments', 'suspense', 'payer_returns', 'losses')`,
    ),
  ],
);

/** A balanced set of postings, posted once per idempotency key. */
export const transfers = ledger.table(
  "transfers",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    /** Idempotency key, for example `op:<operation_id>:reserve` or `adj:<adjustment_id>`. */
    key: text("key").notNull().unique(),
    kind: text("kind").notNull(),
    shopId: text("shop_id").notNull(),
    operationId: uuid("operation_id"),
    /** Hash of the canonical request, for keys a client chooses (adjustments). */
    requestHash: text("request_hash"),
    metadata: jsonb("metadata").$type<Record<string, string>>().notNull().default({}),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("transfers_operation").on(t.operationId)],
);

/**
 * One side of a transfer on one account. Amounts are positive; `side` says which way.
 * Append-only: a trigger refuses updates and deletes, and a deferred constraint trigger
 * refuses a commit in which any transfer's debits and credits differ in some currency.
 */
export const postings = ledger.table(
  "postings",
  {
    id: bigserial("id", { mode: "bigint" }).primaryKey(),
    transferId: uuid("transfer_id")
      .notNull()
      .references(() => transfers.id),
    accountId: uuid("account_id").notNull(),
    currency: text("currency").notNull(),
    side: text("side").notNull(),
    amount: numeric("amount").notNull(),
  },
  (t) => [
    foreignKey({
      name: "postings_account_currency",
      columns: [t.accountId, t.currency],
      foreignColumns: [accounts.id, accounts.currency],
    }),
    index("postings_account").on(t.accountId),
    index("postings_transfer").on(t.transferId),
    check("postings_side", sql`${t.side} in ('debit', 'credit')`),
    check("postings_amount_positive", sql`${t.amount} > 0`),
  ],
);

/**
 * Commission tiers of a shop for one method and direction: a quote for an amount uses
 * the tier whose closed range [min_amount, max_amount] contains it. `percent` is of the
 * amount in settlement currency; `fixed` is in settlement currency.
 */
export const pricingTiers = ledger.table(
  "pricing_tiers",
  {
    shopId: text("shop_id").notNull(),
    method: text("method").notNull(),
    direction: text("direction").notNull(),
    minAmount: numeric("min_amount").notNull(),
    maxAmount: numeric("max_amount").notNull(),
    percent: numeric("percent").notNull(),
    fixed: numeric("fixed").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.shopId, t.method, t.direction, t.minAmount] }),
    check("pricing_tiers_direction", sql`${t.direction} in ('payin', 'payout')`),
    check("pricing_tiers_range", sql`${t.minAmount} <= ${t.maxAmount}`),
  ],
);

/** The current conversion rate from one currency to another: `to = from × rate`. */
export const fxRates = ledger.table(
  "fx_rates",
  {
    fromCurrency: text("from_currency").notNull(),
    toCurrency: text("to_currency").notNull(),
    rate: numeric("rate").notNull(),
    source: text("source").notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.fromCurrency, t.toCurrency] }),
    check("fx_rates_positive", sql`${t.rate} > 0`),
  ],
);

/**
 * One row (id 1): the pricing version, raised in the transaction of every pricing-tier
 * and FX-rate write. A quote computed from terms read at version n names n, so the
 * operation row records which pricing it was priced with. Absent until the first write
 * (version 0).
 */
export const pricingVersion = ledger.table(
  "pricing_version",
  {
    id: smallint("id").primaryKey(),
    version: bigint("version", { mode: "number" }).notNull(),
  },
  (t) => [check("pricing_version_one_row", sql`${t.id} = 1`)],
);

/**
 * The reserve of one payout and where it stands: `none` (row created to take the lock,
 * nothing posted), `reserved`, `consumed` (the payout completed) or `released` (rejected,
 * cancelled, or a create no provider accepted). The row lock serialises the events of one
 * payout across consumer replicas. `generation` is the operation version of the last
 * reserve or release applied: a reserve after a release posts again only for a newer
 * version (a retried refused create routes again), so a late or repeated one never does.
 */
export const payoutReserves = ledger.table(
  "payout_reserves",
  {
    operationId: uuid("operation_id").primaryKey(),
    shopId: text("shop_id").notNull(),
    state: text("state").notNull().default("none"),
    currency: text("currency"),
    amount: numeric("amount"),
    generation: bigint("generation", { mode: "number" }).notNull().default(0),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [check("payout_reserves_state", sql`${t.state} in ('none', 'reserved', 'consumed', 'released')`)],
);

export const outbox = outboxTable(ledger);
export const inbox = inboxTable(ledger);

/** Events a consumer of this service could not apply after its attempts (libs/events, dead letters). */
export const deadLetters = deadLetterTable(ledger);
