import { inboxTable, outboxTable } from "@gw/db";
import { bigint, customType, index, pgSchema, text, timestamp, uuid } from "drizzle-orm/pg-core";

/** The receipts service owns this schema; no other service reads or writes it. */
export const receipts = pgSchema("receipts");

const bytea = customType<{ data: Uint8Array; driverData: Buffer }>({
  dataType: () => "bytea",
  toDriver: (value) => Buffer.from(value),
  fromDriver: (value) => new Uint8Array(value),
});

/**
 * Receipt files as uploaded (PDF receipts of payers and of providers), kept whole so a
 * check can be repeated and a signed download can serve the exact bytes. `sha256` lets
 * the same file uploaded twice be recognised.
 */
export const receiptFiles = receipts.table(
  "receipt_files",
  {
    id: uuid("id").primaryKey(),
    operationId: uuid("operation_id").notNull(),
    shopId: uuid("shop_id").notNull(),
    contentType: text("content_type").notNull(),
    sizeBytes: bigint("size_bytes", { mode: "bigint" }).notNull(),
    sha256: text("sha256").notNull(),
    bytes: bytea("bytes").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("receipt_files_operation").on(t.operationId), index("receipt_files_sha256").on(t.sha256)],
);

export const outbox = outboxTable(receipts);
export const inbox = inboxTable(receipts);
