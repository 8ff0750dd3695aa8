import { deadLetterTable, inboxTable } from "@gw/db";
import { sql } from "drizzle-orm";
import { bigint, check, index, integer, pgSchema, text, timestamp, uuid } from "drizzle-orm/pg-core";

/** The webhooks service owns this schema; no other service reads or writes it. */
export const webhooks = pgSchema("webhooks");

/**
 * One webhook endpoint per shop. The secret is kept in the clear because every delivery
 * is signed with it (HMAC needs the key itself); it never leaves this service except in
 * the PutEndpoint and RotateSecret responses, and is never logged. After a rotation the
 * previous secret keeps signing alongside the new one until `previous_secret_expires_at`,
 * so a merchant can switch its verifier without losing events.
 */
export const endpoints = webhooks.table("endpoints", {
  shopId: uuid("shop_id").primaryKey(),
  url: text("url").notNull(),
  secret: text("secret").notNull(),
  previousSecret: text("previous_secret"),
  previousSecretExpiresAt: timestamp("previous_secret_expires_at", { withTimezone: true }),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Delivery statuses: `pending` (an attempt is due or scheduled), `delivered`, `failed`. */
export const DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * One row per operation event that is delivered to a merchant, keyed by the event id
 * (the `webhook-id` header, the same on every attempt). `payload` is the exact JSON body,
 * fixed when the event arrives so that every attempt signs and sends the same bytes.
 * `retry_step` counts the scheduled retries used. `leased_until` marks an attempt in
 * flight: no other worker claims the row before then, and a crashed worker's delivery
 * becomes claimable again by itself once it passes.
 */
export const deliveries = webhooks.table(
  "deliveries",
  {
    eventId: uuid("event_id").primaryKey(),
    shopId: uuid("shop_id").notNull(),
    operationId: uuid("operation_id").notNull(),
    operationVersion: bigint("operation_version", { mode: "bigint" }).notNull(),
    eventType: text("event_type").notNull(),
    occurredAt: timestamp("occurred_at", { withTimezone: true }).notNull(),
    payload: text("payload").notNull(),
    status: text("status").$type<DeliveryStatus>().notNull(),
    attempts: integer("attempts").notNull().default(0),
    retryStep: integer("retry_step").notNull().default(0),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }),
    leasedUntil: timestamp("leased_until", { withTimezone: true }),
    lastAttemptAt: timestamp("last_attempt_at", { withTimezone: true }),
    lastStatusCode: integer("last_status_code"),
    lastError: text("last_error"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    deliveredAt: timestamp("delivered_at", { withTimezone: true }),
  },
  (t) => [
    index("deliveries_due").on(t.nextAttemptAt).where(sql`status = 'pending'`),
    index("deliveries_pending_by_operation")
      .on(t.operationId, t.operationVersion)
      .where(sql`status = 'pending'`),
    index("deliveries_by_shop").on(t.shopId, t.createdAt),
    check(
      "deliveries_status",
      sql`${t.status} in (${sql.raw(DELIVERY_STATUSES.map((s) => `'${s}'`).join(", "))})`,
    ),
  ],
);

export const inbox = inboxTable(webhooks);

/** Events a consumer of this service could not apply after its attempts (libs/events, dead letters). */
export const deadLetters = deadLetterTable(webhooks);
