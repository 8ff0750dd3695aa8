import { inboxTable, outboxTable } from "@gw/db";
import { sql } from "drizzle-orm";
import { bigint, check, index, numeric, pgSchema, text, timestamp, uuid } from "drizzle-orm/pg-core";

/** The matching service owns this schema; no other service reads or writes it. */
export const matching = pgSchema("matching");

const amountColumn = (name: string) => numeric(name, { precision: 20, scale: 2 });

/**
 * Payouts routed to the pool, as liquidity. Every payout's amount is split at all times
 * into four parts that add up exactly (a check constraint):
 * - `free_amount`: what payins can still be admitted into;
 * - `reserved_amount`: the sum of the payout's slots in status `reserved`;
 * - `paid_amount`: the sum of its contributions (confirmed payins);
 * - `handed_off_amount`: the remainder given to the next provider when the window ended.
 * Every part is non-negative, so a payout can never be over-allocated: an admission is
 * `free_amount = free_amount - x where free_amount >= x`, and the constraints refuse
 * anything else even if a statement were wrong.
 */
export const poolPayouts = matching.table(
  "pool_payouts",
  {
    operationId: uuid("operation_id").primaryKey(),
    shopId: uuid("shop_id").notNull(),
    method: text("method").notNull(),
    currency: text("currency").notNull(),
    amount: amountColumn("amount").notNull(),
    freeAmount: amountColumn("free_amount").notNull(),
    reservedAmount: amountColumn("reserved_amount").notNull().default("0"),
    paidAmount: amountColumn("paid_amount").notNull().default("0"),
    handedOffAmount: amountColumn("handed_off_amount").notNull().default("0"),
    /** The payout's destination, given to payers as their requisites. */
    number: text("number").notNull(),
    name: text("name").notNull(),
    bankname: text("bankname"),
    /** Admissions stop at this instant; the sweep hands the remainder off after it. */
    windowEndsAt: timestamp("window_ends_at", { withTimezone: true }).notNull(),
    /** `open` (in the pool), `completed` (fully paid) or `handed_off` (window ended). */
    status: text("status").notNull().default("open"),
    version: bigint("version", { mode: "number" }).notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    closedAt: timestamp("closed_at", { withTimezone: true }),
  },
  (t) => [
    check("pool_payouts_amount_positive", sql`${t.amount} > 0`),
    check(
      "pool_payouts_parts_non_negative",
      sql`${t.freeAmount} >= 0 and ${t.reservedAmount} >= 0 and ${t.paidAmount} >= 0 and ${t.handedOffAmount} >= 0`,
    ),
    check(
      "pool_payouts_parts_add_up",
      sql`${t.freeAmount} + ${t.reservedAmount} + ${t.paidAmount} + ${t.handedOffAmount} = ${t.amount}`,
    ),
    check("pool_payouts_status", sql`${t.status} in ('open', 'completed', 'handed_off')`),
    // Admission and both read scans walk this index in matching order (free remainder,
    // then age), starting at a bound; closed payouts are not in it. It carries the window
    // end last, so the scans run index-only and never visit the table's pages.
    index("pool_payouts_matching_order_window")
      .on(t.method, t.currency, t.freeAmount, t.createdAt, t.operationId, t.windowEndsAt)
      .where(sql`status = 'open'`),
    index("pool_payouts_window").on(t.windowEndsAt).where(sql`status = 'open'`),
  ],
);

/**
 * A payin's reservation in one payout. The payin id is the key, so a payin holds at most
 * one slot and a retried admission finds the slot it already has.
 */
export const slots = matching.table(
  "slots",
  {
    payinId: uuid("payin_id").primaryKey(),
    payoutId: uuid("payout_id")
      .notNull()
      .references(() => poolPayouts.operationId),
    shopId: uuid("shop_id").notNull(),
    amount: amountColumn("amount").notNull(),
    /** `reserved`, `confirmed` or `released`. */
    status: text("status").notNull().default("reserved"),
    /** Why a released slot was released: `expired`, `rejected` or `cancelled`. */
    releaseReason: text("release_reason"),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    /** The routing attempt that admitted it (the operation's version then); 0: unknown. */
    generation: bigint("generation", { mode: "number" }).notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    settledAt: timestamp("settled_at", { withTimezone: true }),
  },
  (t) => [
    check("slots_amount_positive", sql`${t.amount} > 0`),
    check("slots_status", sql`${t.status} in ('reserved', 'confirmed', 'released')`),
    check(
      "slots_release_reason",
      sql`(${t.status} = 'released') = (${t.releaseReason} is not null) and (${t.releaseReason} is null or ${t.releaseReason} in ('expired', 'rejected', 'cancelled'))`,
    ),
    index("slots_payout").on(t.payoutId),
    index("slots_expiry").on(t.expiresAt).where(sql`status = 'reserved'`),
  ],
);

/**
 * The routing generations matching was told of per payin: the newest admission's and the
 * newest release's, slot or no slot (a release with no slot is a tombstone). An Admit at
 * or below `released` is refused, so an Admit that commits after the release of its own
 * attempt (its answer timed out, the attempt was withdrawn) reserves nothing. Both the
 * admission statement and a release upsert this row first, so its row lock orders them:
 * whichever comes second sees what the first committed.
 */
export const payinGenerations = matching.table("payin_generations", {
  payinId: uuid("payin_id").primaryKey(),
  admitted: bigint("admitted", { mode: "number" }).notNull().default(0),
  released: bigint("released", { mode: "number" }).notNull().default(0),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/** A confirmed payin's actual amount, paid into one payout: one `receipts` item of it. */
export const contributions = matching.table(
  "contributions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    payoutId: uuid("payout_id")
      .notNull()
      .references(() => poolPayouts.operationId),
    payinId: uuid("payin_id")
      .notNull()
      .unique()
      .references(() => slots.payinId),
    amount: amountColumn("amount").notNull(),
    completedAt: timestamp("completed_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check("contributions_amount_positive", sql`${t.amount} > 0`),
    index("contributions_payout").on(t.payoutId, t.completedAt, t.id),
  ],
);

export const outbox = outboxTable(matching);
export const inbox = inboxTable(matching);
