import { index, pgSchema, text, timestamp } from "drizzle-orm/pg-core";

/** The back office owns this schema; no other service reads or writes it. */
export const backoffice = pgSchema("backoffice");

/**
 * One row per operator session. The cookie carries a random id; only its sha256 (hex)
 * is stored, so a copy of this table opens nothing. A session is valid while it is not
 * revoked, its `expires_at` (absolute: login + 8 h) has not passed and it was last seen
 * within the idle timeout; every request moves `last_seen_at`.
 */
export const sessions = backoffice.table(
  "sessions",
  {
    idHash: text("id_hash").primaryKey(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    lastSeenAt: timestamp("last_seen_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
    /** Why it ended: `logout`, `end_all`; null while it is live. */
    revokedBy: text("revoked_by"),
  },
  (t) => [index("sessions_expires").on(t.expiresAt)],
);
