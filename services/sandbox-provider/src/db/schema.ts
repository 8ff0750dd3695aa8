import { sql } from "drizzle-orm";
import {
  bigserial,
  boolean,
  index,
  integer,
  jsonb,
  numeric,
  pgSchema,
  primaryKey,
  text,
  timestamp,
  unique,
  uuid,
} from "drizzle-orm/pg-core";
import type { FaultProfile } from "../faults.ts";

/** The sandbox provider owns this schema; no gateway service reads or writes it. */
export const sandbox = pgSchema("sandbox");

/** How a provider answers one direction (payin or payout), as set through the control API. */
export interface Behaviour {
  mode: "accept" | "decline" | "no_answer";
  receipt_required: boolean;
  /** Requisites stay payable this long; `expires_at` is reported only when set. */
  expires_in_seconds?: number | undefined;
  /** The provider answers only after this delay (it has taken the operation before). */
  delay_ms?: number | undefined;
  /**
   * How the provider answers a withdrawal (`POST .../operations/{reference}/withdraw`):
   * `supported` (the default) withdraws a pending operation, `unsupported` answers 501
   * `not_supported`, `failing` answers 503 without withdrawing anything.
   */
  withdraw?: "supported" | "unsupported" | "failing" | undefined;
  /** Faults injected with a probability each (see faults.ts); none when absent. */
  faults?: FaultProfile | undefined;
  /** The decline reason reported in `decline` mode. */
  decline_reason?: string | undefined;
  /** Fixed requisites for payins; generated from the reference when absent. */
  requisites?:
    | {
        card_number?: string | undefined;
        phone?: string | undefined;
        bank_code?: string | undefined;
        holder_name?: string | undefined;
      }
    | undefined;
}

/**
 * The providers the sandbox hosts. `credentials` is the shared secret that authenticates
 * the gateway's calls and signs the callbacks; the sandbox needs it in clear to sign.
 */
export const providers = sandbox.table("providers", {
  name: text("name").primaryKey(),
  credentials: text("credentials").notNull(),
  payin: jsonb("payin").$type<Behaviour>().notNull(),
  payout: jsonb("payout").$type<Behaviour>().notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/**
 * What a provider received: one row per (provider, reference), where the reference is
 * the gateway's operation_id. `decision` is fixed by the first create and replayed for
 * every repeat; `status` moves from `pending` to `completed` or `rejected` once settled.
 *
 * A **tombstone** is the row a withdrawal by key writes for a reference the provider has
 * no record of (`decision` declined, `decline_reason` `withdrawn_by_key`, `status`
 * withdrawn, `requests` 0, no method or amount yet): the unique (provider, reference)
 * makes a create still on its way find it and be refused, never paid. A late create fills
 * in its figures and counts itself in `requests`.
 */
export const operations = sandbox.table(
  "operations",
  {
    id: uuid("id").primaryKey(),
    provider: text("provider")
      .notNull()
      .references(() => providers.name),
    reference: text("reference").notNull(),
    direction: text("direction").$type<"payin" | "payout">().notNull(),
    /** Null only on a tombstone no create reached yet. */
    method: text("method"),
    amount: numeric("amount", { precision: 20, scale: 2 }),
    currency: text("currency"),
    number: text("number"),
    name: text("name"),
    bankname: text("bankname"),
    callbackUrl: text("callback_url"),
    decision: text("decision").$type<"accepted" | "declined" | "no_answer">().notNull(),
    declineReason: text("decline_reason"),
    requisites: jsonb("requisites").$type<{ number: string; name?: string; bankname?: string }>(),
    receiptRequired: boolean("receipt_required").notNull().default(false),
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    /**
     * `withdrawn`: the gateway withdrew a pending operation (cancel or expiry); the provider
     * then takes no money for it and refuses to settle it. `settled_at` is when it got there.
     */
    status: text("status")
      .$type<"pending" | "completed" | "rejected" | "withdrawn">()
      .notNull()
      .default("pending"),
    /** How many create requests carried this reference (the first one and its repeats). */
    requests: integer("requests").notNull().default(1),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    settledAt: timestamp("settled_at", { withTimezone: true }),
  },
  (t) => [
    unique("operations_provider_reference").on(t.provider, t.reference),
    index("operations_reference").on(t.reference),
  ],
);

/** The physical parts of a completed operation, reported in its callback. */
export const legs = sandbox.table(
  "legs",
  {
    operationId: uuid("operation_id")
      .notNull()
      .references(() => operations.id),
    position: integer("position").notNull(),
    id: uuid("id").notNull().unique(),
    amount: numeric("amount", { precision: 20, scale: 2 }).notNull(),
    completedAt: timestamp("completed_at", { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.operationId, t.position] })],
);

/**
 * Result callbacks and their delivery state. The body is stored exactly as first signed,
 * so every retry carries the same bytes and the same `callback_id`; only the signature's
 * timestamp is fresh. A worker claims a due row by pushing `next_attempt_at` forward by a
 * lease, so several replicas (or a restart mid-attempt) never lose or double-own one.
 */
export const callbacks = sandbox.table(
  "callbacks",
  {
    seq: bigserial("seq", { mode: "bigint" }).primaryKey(),
    id: uuid("id").notNull().unique(),
    operationId: uuid("operation_id")
      .notNull()
      .references(() => operations.id),
    url: text("url").notNull(),
    body: text("body").notNull(),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }).notNull().defaultNow(),
    deliveredAt: timestamp("delivered_at", { withTimezone: true }),
    /** Set when the attempts ran out; the row is then left alone. */
    abandonedAt: timestamp("abandoned_at", { withTimezone: true }),
    lastStatusCode: integer("last_status_code"),
    lastError: text("last_error"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("callbacks_due").on(t.nextAttemptAt).where(sql`delivered_at is null and abandoned_at is null`),
  ],
);

/**
 * Every fault the sandbox injected, one row each, so a run can count what it got by
 * kind (the control API's books) even across restarts of the sandbox.
 */
export const faultLog = sandbox.table(
  "fault_log",
  {
    seq: bigserial("seq", { mode: "bigint" }).primaryKey(),
    provider: text("provider").notNull(),
    direction: text("direction").notNull(),
    reference: text("reference").notNull(),
    /** `stage.fault`, e.g. `create.accept_then_5xx`. */
    kind: text("kind").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("fault_log_provider").on(t.provider)],
);
