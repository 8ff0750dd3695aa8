import { inboxTable, outboxTable } from "@gw/db";
import { bigint, index, numeric, pgSchema, text, timestamp, uuid } from "drizzle-orm/pg-core";

/** The matching service owns this schema; no other service reads or writes it. */
export const matching = pgSchema("matching");

/**
 * Payouts routed to the pool, as liquidity: `free_amount` is what payins can still be
 * admitted into. Filled by the pool engine.
 */
export const poolPayouts = matching.table(
  "pool_payouts",
  {
    operationId: uuid("operation_id").primaryKey(),
    shopId: uuid("shop_id").notNull(),
    method: text("method").notNull(),
    currency: text("currency").notNull(),
    amount: numeric("amount", { precision: 20, scale: 2 }).notNull(),
    freeAmount: numeric("free_amount", { precision: 20, scale: 2 }).notNull(),
    version: bigint("version", { mode: "number" }).notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("pool_payouts_free").on(t.method, t.currency, t.freeAmount)],
);

export const outbox = outboxTable(matching);
export const inbox = inboxTable(matching);
