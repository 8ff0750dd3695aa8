import { Code, ConnectError } from "@connectrpc/connect";
import type { ReceiptItem } from "@gw/proto/gateway/operations/v1/operations_pb";
import { ReceiptEvidenceUnavailableError } from "../domain/lifecycle/errors.ts";
import type { LegRow, OperationRow } from "../domain/model.ts";
import { receiptsOf } from "../domain/receipts-of.ts";
import type { ReceiptDeps } from "./review.ts";

/** Signing links is one indexed query: a read must not wait long for it. */
export const SIGN_TIMEOUT_MS = 2_000;

/**
 * The receipts of a read with their signed links. Contributions proven by a receipt get
 * a `receipt_url` signed now by the receipts service (links are never stored); provider
 * legs keep null. When signing fails (receipts unreachable, no secret), the read by
 * `operation_id` answers UNAVAILABLE `receipt_evidence_unavailable` (503) and the read by
 * `merchant_operation_id` answers `unavailable` with no receipts, as the spec requires.
 */
export async function receiptEvidence(
  d: ReceiptDeps,
  row: OperationRow,
  legs: LegRow[],
  lookup: "operationId" | "merchantOperationId",
): Promise<{ receipts: ReceiptItem[]; status: string }> {
  const base = receiptsOf(row, legs);
  const proven = legs.filter((l) => l.receipt_id);
  if (row.status !== "completed" || proven.length === 0) return base;
  try {
    const res = await d.receipts.signReceiptUrls(
      { shopId: row.shop_id, receiptIds: proven.map((l) => l.receipt_id as string) },
      { timeoutMs: SIGN_TIMEOUT_MS },
    );
    const urlOf = new Map(res.urls.map((u) => [u.receiptId, u.url]));
    const legUrl = new Map(proven.map((l) => [l.id, urlOf.get(l.receipt_id as string)]));
    for (const item of base.receipts) {
      if (!legUrl.has(item.id)) continue;
      const url = legUrl.get(item.id);
      if (!url) throw new Error("a receipt link is missing from the answer");
      item.receiptUrl = url;
    }
    return base;
  } catch (err) {
    // Never log the error's text as is: a partial answer could carry a signed link.
    d.logger.warn(
      { operationId: row.id, code: err instanceof ConnectError ? Code[err.code] : "internal" },
      "receipt links could not be signed",
    );
    if (lookup === "operationId") throw new ReceiptEvidenceUnavailableError();
    return { receipts: [], status: "unavailable" };
  }
}
