import { create } from "@bufbuild/protobuf";
import { Decimal } from "@gw/money";
import { type ReceiptItem, ReceiptItemSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { isTerminal, type LegRow, type OperationRow } from "./model.ts";

/**
 * The receipt items of a row: completed legs, only once the parent completed. The part of
 * the actual amount no leg accounts for (a provider that reported its completion without
 * legs: the whole of it, or its share of a pool payout handed off to it) is one synthetic
 * contribution with that authoritative amount and no receipt, and the evidence is then
 * `partial`, as the spec defines; rereading does not change it.
 */
export function receiptsOf(row: OperationRow, legs: LegRow[]): { receipts: ReceiptItem[]; status: string } {
  if (!isTerminal(row.status)) return { receipts: [], status: "not_ready" };
  if (row.status !== "completed") return { receipts: [], status: "complete" };
  const receipts = legs.map((l) =>
    create(ReceiptItemSchema, {
      id: l.id,
      amount: new Decimal(l.amount).toFixed(2),
      completedAt: l.completed_at.toISOString(),
    }),
  );
  const decomposed = legs.reduce((sum, l) => sum.plus(l.amount), new Decimal(0));
  const rest = new Decimal(row.actual_amount).minus(decomposed);
  if (rest.lte(0)) return { receipts, status: "complete" };
  receipts.push(
    create(ReceiptItemSchema, {
      id: row.id,
      amount: rest.toFixed(2),
      completedAt: row.updated_at.toISOString(),
    }),
  );
  // Ordered by completed_at, then id, as the legs are.
  receipts.sort((a, b) =>
    a.completedAt === b.completedAt ? (a.id < b.id ? -1 : 1) : a.completedAt < b.completedAt ? -1 : 1,
  );
  return { receipts, status: "partial" };
}
