import { sql } from "drizzle-orm";
import {
  bigserial,
  check,
  customType,
  index,
  integer,
  jsonb,
  type PgSchema,
  primaryKey,
  text,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";

const sqlUnpublished = sql`published_at is null`;

const bytea = customType<{ data: Uint8Array; driverData: Buffer }>({
  dataType: () => "bytea",
  toDriver: (value) => Buffer.from(value),
  fromDriver: (value) => new Uint8Array(value),
});

/**
 * The transactional outbox of a service: events are inserted in the same transaction as
 * the state change they describe, and the relay publishes them to JetStream with `id`
 * as the Nats-Msg-Id. `seq` keeps publication in commit order within one relay.
 */
export function outboxTable(schema: PgSchema) {
  return schema.table(
    "outbox",
    {
      seq: bigserial("seq", { mode: "bigint" }).primaryKey(),
      id: uuid("id").notNull().unique(),
      subject: text("subject").notNull(),
      payload: bytea("payload").notNull(),
      headers: jsonb("headers").$type<Record<string, string>>().notNull().default({}),
      createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
      publishedAt: timestamp("published_at", { withTimezone: true }),
    },
    (t) => [index("outbox_unpublished").on(t.seq).where(sqlUnpublished)],
  );
}

/**
 * Consumed event ids per durable consumer. A consumer inserts the id in the same
 * transaction as the effect of the event, so a redelivered event is applied once.
 */
export function inboxTable(schema: PgSchema) {
  return schema.table(
    "inbox",
    {
      consumer: text("consumer").notNull(),
      eventId: uuid("event_id").notNull(),
      processedAt: timestamp("processed_at", { withTimezone: true }).notNull().defaultNow(),
    },
    (t) => [primaryKey({ columns: [t.consumer, t.eventId] })],
  );
}

/**
 * Events a durable consumer of the service could not apply after its attempts
 * (`runConsumer`'s `maxAttempts`): recorded here and acked, so the rest of the stream keeps
 * flowing, until an operator retries (re-applies) or discards them. `payload` is the
 * message as received, so a retry applies exactly what failed.
 */
export function deadLetterTable(schema: PgSchema) {
  return schema.table(
    "dead_letters",
    {
      consumer: text("consumer").notNull(),
      eventId: uuid("event_id").notNull(),
      subject: text("subject").notNull(),
      payload: bytea("payload").notNull(),
      attempts: integer("attempts").notNull(),
      error: text("error").notNull(),
      status: text("status").notNull().default("open"),
      firstFailedAt: timestamp("first_failed_at", { withTimezone: true }).notNull().defaultNow(),
      lastFailedAt: timestamp("last_failed_at", { withTimezone: true }).notNull().defaultNow(),
      resolvedAt: timestamp("resolved_at", { withTimezone: true }),
      resolvedBy: text("resolved_by"),
      resolutionReason: text("resolution_reason"),
    },
    (t) => [
      primaryKey({ columns: [t.consumer, t.eventId] }),
      check("dead_letters_status", sql`${t.status} in ('open', 'retried', 'discarded')`),
      index("dead_letters_last_failed").on(t.lastFailedAt),
    ],
  );
}
