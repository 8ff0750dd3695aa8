import type { Database } from "@gw/db";
import type { Logger } from "@gw/log";
import type { GetReviewFileResponse } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { and, desc, eq, ne } from "drizzle-orm";
import { receiptReviews } from "./db/schema.ts";
import { invalid, notFound, receiptFileUnavailable } from "./errors.ts";
import type { ReceiptStore } from "./store/receipt-store.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ReviewFileDeps {
  db: Database;
  store: ReceiptStore;
  logger: Logger;
}

/**
 * `GetReviewFile`, for operators only: the stored bytes of one review by id, or of an
 * operation's latest review (not an abandoned one), whatever its verdict. There is no
 * shop scope: the edge calls it from the admin API alone. The file is never logged.
 */
export async function getReviewFile(
  d: ReviewFileDeps,
  req: { id: { case: "operationId" | "receiptId"; value: string } | { case: undefined; value?: undefined } },
): Promise<Omit<GetReviewFileResponse, "$typeName" | "$unknown">> {
  if (!req.id.case || !UUID.test(req.id.value))
    throw invalid("id", "operation_id or receipt_id (a UUID) is required");
  const [row] = await d.db
    .select()
    .from(receiptReviews)
    .where(
      req.id.case === "receiptId"
        ? eq(receiptReviews.id, req.id.value)
        : and(eq(receiptReviews.operationId, req.id.value), ne(receiptReviews.status, "abandoned")),
    )
    .orderBy(desc(receiptReviews.createdAt), desc(receiptReviews.id))
    .limit(1);
  if (!row) throw notFound("review");
  const file = await d.store.get(row.sha256);
  if (!file) {
    d.logger.error({ receiptId: row.id }, "receipt file missing from the store");
    throw receiptFileUnavailable();
  }
  return {
    file,
    contentType: row.contentType,
    fileName: row.fileName ?? `receipt-${row.id}.pdf`,
    sha256: row.sha256,
    receiptId: row.id,
    shopId: row.shopId,
  };
}
