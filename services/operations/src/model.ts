import { create } from "@bufbuild/protobuf";
import { type Currency, Decimal, formatAmount, settlementFigures } from "@gw/money";
import { type Operation, OperationSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { bankDetails } from "./banks.ts";

/** An `operations.operations` row as postgres.js returns it (numeric and int8 as strings). */
export interface OperationRow {
  id: string;
  shop_id: string;
  merchant_id: string;
  merchant_operation_id: string;
  request_hash: string | null;
  type: "payment" | "payout";
  status: Status;
  method: string | null;
  currency: string | null;
  expected_amount: string | null;
  actual_amount: string;
  client_id: string | null;
  client_ip: string | null;
  number: string | null;
  name: string | null;
  bankname: string | null;
  provider: string | null;
  receipt_required: boolean;
  expires_at: Date | null;
  settlement_currency: string | null;
  fx_rate: string | null;
  fx_source: string | null;
  commission_percent: string | null;
  commission_fixed: string | null;
  manual_check_reason: string | null;
  hosted_page: boolean;
  cancel_requested: boolean;
  cancelled_by_command: boolean;
  cancel_reason: string | null;
  routing_deadline: Date | null;
  /** Providers of the cascade that gave a definite "no" (see the schema). */
  routing_passed: string[];
  /** The provider whose create answer is unknown and is being resolved, if any. */
  routing_unresolved: string | null;
  version: string;
  created_at: Date;
  updated_at: Date;
}

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
