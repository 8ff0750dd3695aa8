import { create } from "@bufbuild/protobuf";
import { type Currency, Decimal, formatAmount, settlementFigures } from "@gw/money";
import { type Operation, OperationSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import type { legs, operationsTable } from "../db/schema.ts";
import { bankDetails } from "./banks.ts";

/** `merchantOperationId` → `merchant_operation_id`: drizzle's keys as the columns are named. */
type CamelToSnake<S extends string> = S extends `${infer H}${infer T}`
  ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${CamelToSnake<T>}`
  : S;
export type SnakeKeys<T> = { [K in keyof T as K extends string ? CamelToSnake<K> : never]: T[K] };

/**
 * An `operations.operations` row as postgres.js returns it, typed from the drizzle schema
 * (so a column added there appears here): numeric as strings, timestamps as Dates (the
 * store hydrates them), with the value sets the schema keeps as text narrowed, int8
 * `version` as a string, and the reconciler's bookkeeping columns left to `ReconcileRow`.
 */
export type OperationRow = Omit<
  SnakeKeys<typeof operationsTable.$inferSelect>,
  | "type"
  | "status"
  | "version"
  | "next_check_at"
  | "reconcile_checks"
  | "stuck_alerted_at"
  | "operator_queued_at"
  | "pricing_version"
> & {
  type: "payment" | "payout";
  status: Status;
  version: string;
  /** A bigint column, as the driver reads it (text). */
  pricing_version: string | null;
};

/**
 * A completed part of an operation (a provider's leg, a receipt-proven contribution, a
 * pool contribution), typed from the drizzle schema. `receipt_id` is the receipts
 * service's id of the receipt proving it, null (or absent) for a provider-reported leg.
 */
export type LegRow = Pick<SnakeKeys<typeof legs.$inferSelect>, "id" | "amount" | "completed_at"> & {
  receipt_id?: string | null;
};

/** The operations row with the reconciler's bookkeeping columns, which are never part of its state. */
export type ReconcileRow = OperationRow &
  Pick<
    SnakeKeys<typeof operationsTable.$inferSelect>,
    "next_check_at" | "reconcile_checks" | "stuck_alerted_at" | "operator_queued_at"
  >;

export type Status =
  | "routing"
  | "pending"
  | "awaiting_confirmation"
  | "manual_check"
  | "completed"
  | "cancelled"
  | "rejected";

/** Statuses after which nothing about the operation changes. */
export const TERMINAL: ReadonlySet<Status> = new Set(["completed", "cancelled", "rejected"]);
export const isTerminal = (status: Status) => TERMINAL.has(status);

/** Subject suffix and event type of a state: `payment.completed`. */
export const eventType = (row: Pick<OperationRow, "type" | "status">) => `${row.type}.${row.status}`;

/**
 * The merchant-facing view of a row. Settlement figures are the expected ones before
 * terminal and are settled on the captured amount at terminal; `recorded_*` appear
 * only once something was captured; destination fields only once allocated (payins) or
 * as sent (payouts); no provider or routing identifier is ever copied.
 */
export function toOperation(row: OperationRow): Operation {
  const currency = row.currency ?? "";
  const actual = new Decimal(row.actual_amount);
  const op = create(OperationSchema, {
    operationId: row.id,
    merchantOperationId: row.merchant_operation_id,
    type: row.type,
    status: row.status,
    method: row.method ?? "",
    expectedAmount: row.expected_amount ?? "",
    actualAmount: actual.toFixed(2),
    currency,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    version: BigInt(row.version),
  });
  const settlementCurrency = row.settlement_currency as Currency | null;
  const fxRate = row.fx_rate === null ? undefined : new Decimal(row.fx_rate);
  if (fxRate && row.fx_source) {
    op.fxRate = fxRate.toFixed(6);
    op.fxSource = row.fx_source;
  }
  if (settlementCurrency && row.expected_amount !== null && row.commission_percent !== null) {
    const terminal = isTerminal(row.status);
    // At terminal the figures are settled on what was captured (paid out, for a payout).
    const base = terminal ? actual : new Decimal(row.expected_amount);
    const figures = settlementFigures({
      amount: base,
      settlementCurrency,
      fxRate,
      terms: { percent: row.commission_percent, fixed: row.commission_fixed ?? "0" },
      direction: row.type === "payment" ? "payin" : "payout",
    });
    op.settlementAmount = formatAmount(figures.settlement, settlementCurrency);
    op.settlementCurrency = settlementCurrency;
    op.commissionAmount = formatAmount(figures.commission, settlementCurrency);
    if (!actual.isZero()) {
      op.recordedCurrency = settlementCurrency;
      op.recordedAmount = formatAmount(figures.converted, settlementCurrency);
    }
  }
  if (row.receipt_required && row.type === "payment") {
    op.externalConfirmation = {
      $typeName: "gateway.operations.v1.ExternalConfirmation",
      required: true,
      methods: ["receipt"],
    };
  }
  if (row.number !== null) {
    op.number = row.number;
    op.name = row.name ?? undefined;
    if (row.bankname) {
      op.bankname = row.bankname;
      op.banknameDetails = bankDetails(currency, row.bankname);
    }
  }
  if (row.expires_at) op.expiresAt = row.expires_at.toISOString();
  if (row.status === "manual_check") op.manualCheckReason = row.manual_check_reason ?? "potential_fake";
  return op;
}
