import type { ListOperatorQueueRequest } from "@gw/proto/gateway/operations/v1/operator_queue_pb";
import { ValidationError } from "../domain/lifecycle/errors.ts";
import type { OperationStore } from "../repository/operations.ts";

/**
 * Admin: the operator queue, payouts whose provider neither declined them nor confirmed a
 * withdrawal for longer than PAYOUT_OPERATOR_HORIZON_MS (the reconciler queues them). A
 * read only: a person decides with the provider's own evidence; the payout's status and
 * its reserve stay as they are until that provider answers.
 */
export async function listOperatorQueue(store: OperationStore, req: ListOperatorQueueRequest) {
  const limit = req.limit === 0 ? 100 : req.limit;
  if (limit < 1 || limit > 500) throw new ValidationError("limit must be 1..500", "limit");
  const rows = await store.operatorQueue.listAwaiting(limit);
  return {
    payouts: rows.map((r) => ({
      operationId: r.id,
      shopId: r.shop_id,
      merchantOperationId: r.merchant_operation_id,
      amount: r.amount ?? "",
      currency: r.currency ?? "",
      createdAt: r.created_at,
      operatorQueuedAt: r.operator_queued_at,
      unresolvedProvider: r.routing_unresolved ?? undefined,
      passedProviders: r.routing_passed,
      reconcileChecks: r.reconcile_checks,
      nextCheckAt: r.next_check_at ?? undefined,
      withdrawals: (r.withdrawals ?? []).map((w) => ({
        provider: w.provider,
        status: w.status,
        attempts: w.attempts,
        lastError: w.last_error ?? undefined,
        updatedAt: w.updated_at,
      })),
    })),
  };
}
