import type { ListOperationsAuditRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { ValidationError } from "../domain/lifecycle/errors.ts";
import type { OperationStore } from "../repository/operations.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A page's default and largest size. */
export const AUDIT_PAGE = { default: 500, max: 1000 } as const;

/** The page size a request asks for, within `AUDIT_PAGE`. */
export const pageSize = (limit: number) => (limit > 0 ? Math.min(limit, AUDIT_PAGE.max) : AUDIT_PAGE.default);

/**
 * Admin audit read: every operation of every shop in id order, a page at a time (keyset
 * on the id), with the completed legs per provider. What the money-conservation checker
 * and an operator compare with the providers' books. Throws `ValidationError` for a
 * cursor that is not a UUID.
 */
export async function listOperationsAudit(store: OperationStore, req: ListOperationsAuditRequest) {
  if (req.cursor !== "" && !UUID.test(req.cursor)) {
    throw new ValidationError("cursor must be the next_cursor of the page before", "cursor");
  }
  const limit = pageSize(req.limit);
  const rows = await store.audit.operations(req.cursor, limit);
  return {
    operations: rows.map((r) => ({
      id: r.id,
      shopId: r.shop_id,
      type: r.type,
      status: r.status,
      provider: r.provider ?? "",
      amount: r.amount ?? "",
      actualAmount: r.actual_amount,
      currency: r.currency ?? "",
      placeholder: r.placeholder,
      legs: r.legs ?? [],
      createdAt: r.created_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
    })),
    nextCursor: rows.length === limit ? (rows.at(-1)?.id ?? "") : "",
  };
}
