import { inboxTable, outboxTable } from "@gw/db";
import { sql } from "drizzle-orm";
import {
  bigint,
  check,
  customType,
  index,
  jsonb,
  numeric,
  pgSchema,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import type { Finding } from "../review/findings.ts";

/** The receipts service owns this schema; no other service reads or writes it. */
export const receipts = pgSchema("receipts");

const bytea = customType<{ data: Uint8Array; driverData: Buffer }>({
  dataType: () => "bytea",
  toDriver: (value) => Buffer.from(value),
  fromDriver: (value) => new Uint8Array(value),
});

/**
 * The Postgres implementation of `ReceiptStore`: file contents addressed by their
 * sha256, so the same bytes uploaded twice are stored once. Rows are never deleted by
 * the service: a receipt is evidence.
 */
export const receiptBlobs = receipts.table("receipt_blobs", {
  sha256: text("sha256").primaryKey(),
  sizeBytes: bigint("size_bytes", { mode: "bigint" }).notNull(),
  bytes: bytea("bytes").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

/** What the operation expected when the receipt was submitted, kept as evidence. */
export interface ExpectedSnapshot {
  method: string;
  number: string;
  name?: string | undefined;
  bankname?: string | undefined;
  banknameDetails?: string | undefined;
  amount: string;
  currency: string;
  createdAt: string;
  expiresAt?: string | undefined;
}

/**
 * The statuses of a receipt review: `reviewing` while the checks run, `abandoned` when its
 * process died meanwhile, then the verdict (`completed`, `rejected`, `manual_check`).
 */
export const REVIEW_STATUSES = ["reviewing", "abandoned", "completed", "rejected", "manual_check"] as const;
export type ReviewStatus = (typeof REVIEW_STATUSES)[number];

/**
 * One submitted file and its review. `status` is `reviewing` while the checks run (until
 * `review_deadline`; a row still `reviewing` after it belongs to a process that died and
 * is marked `abandoned` by the next submission), then the verdict: `completed`,
 * `rejected` or `manual_check` (with `manual_check_reason`). An operator's resolution
 * moves a `manual_check` row to `completed` or `rejected`.
 */
export const receiptReviews = receipts.table(
  "receipt_reviews",
  {
    id: uuid("id").primaryKey(),
    operationId: uuid("operation_id").notNull(),
    shopId: uuid("shop_id").notNull(),
    sha256: text("sha256").notNull(),
    sizeBytes: bigint("size_bytes", { mode: "bigint" }).notNull(),
    contentType: text("content_type").notNull(),
    fileName: text("file_name"),
    status: text("status").$type<ReviewStatus>().notNull(),
    manualCheckReason: text("manual_check_reason"),
    actualAmount: numeric("actual_amount"),
    currency: text("currency").notNull(),
    layout: text("layout"),
    transactionId: text("transaction_id"),
    /** The transfer without its identifiers (issuer, amount, minute, recipient): reuse however the ids are laid out. */
    transferKey: text("transfer_key"),
    findings: jsonb("findings").$type<Finding[]>().notNull().default([]),
    extraction: jsonb("extraction").$type<Record<string, unknown>>(),
    expected: jsonb("expected").$type<ExpectedSnapshot>().notNull(),
    reviewDeadline: timestamp("review_deadline", { withTimezone: true }).notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    reviewedAt: timestamp("reviewed_at", { withTimezone: true }),
  },
  (t) => [
    index("receipt_reviews_operation").on(t.operationId, t.createdAt),
    index("receipt_reviews_sha256").on(t.sha256),
    index("receipt_reviews_transaction").on(t.transactionId).where(sql`transaction_id is not null`),
    index("receipt_reviews_transfer").on(t.transferKey).where(sql`transfer_key is not null`),
    check(
      "receipt_reviews_status",
      sql`${t.status} in (${sql.raw(REVIEW_STATUSES.map((s) => `'${s}'`).join(", "))})`,
    ),
  ],
);

/** The audit record of an operator's decision on a review in manual_check: one per review. */
export const receiptResolutions = receipts.table(
  "receipt_resolutions",
  {
    id: uuid("id").primaryKey(),
    reviewId: uuid("review_id")
      .notNull()
      .references(() => receiptReviews.id),
    operationId: uuid("operation_id").notNull(),
    decision: text("decision").notNull(),
    amount: numeric("amount"),
    operator: text("operator").notNull(),
    reason: text("reason").notNull(),
    previousStatus: text("previous_status").notNull(),
    previousReason: text("previous_reason"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("receipt_resolutions_review").on(t.reviewId)],
);

export const outbox = outboxTable(receipts);
export const inbox = inboxTable(receipts);
