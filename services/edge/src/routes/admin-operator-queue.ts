import type { OperatorQueuedPayout } from "@gw/proto/gateway/operations/v1/operator_queue_pb";
import { createRoute, z } from "@hono/zod-openapi";
import { CALL_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import { errorResponses, jsonResponse, openApiApp } from "../schemas.ts";

/**
 * Admin: the operator queue of payouts. A payout whose provider neither declined it nor
 * confirmed a withdrawal of its key stays with that provider (it may still pay it); past
 * PAYOUT_OPERATOR_HORIZON_MS the reconciler queues it here. A read only: the decision is a
 * person's, with the provider's own evidence (docs/operations.md, "Payouts awaiting a decision").
 */

const security = [{ AdminBearer: [] }];
const tags = ["admin: operations"];

export const OperatorQueuedPayoutJson = z
  .object({
    operation_id: z.string().openapi({ format: "uuid" }),
    shop_id: z.string().openapi({ format: "uuid" }),
    merchant_operation_id: z.string(),
    amount: z.string().openapi({ example: "1000.00", description: "What the shop asked to pay out." }),
    currency: z.string().openapi({ example: "RUB" }),
    created_at: z.string(),
    operator_queued_at: z.string().openapi({ description: "When the reconciler put it in the queue." }),
    unresolved_provider: z.string().nullable().openapi({
      example: "acme",
      description:
        "The provider whose answer stays unknown (no decline, no confirmed withdrawal): it may hold the payout.",
    }),
    passed_providers: z.array(z.string()).openapi({
      description: "Providers that gave a definite no earlier (a decline, a confirmed withdrawal), in order.",
    }),
    reconcile_checks: z.number().int().openapi({
      description: "How many times the reconciler asked the unresolved provider its status since the create.",
    }),
    next_check_at: z.string().nullable().openapi({ description: "When the reconciler asks next." }),
    withdrawals: z
      .array(
        z.object({
          provider: z.string(),
          status: z.string().openapi({
            example: "not_supported",
            description: "asking | withdrawn | not_found | final | not_supported | gave_up | held",
          }),
          attempts: z.number().int(),
          last_error: z.string().nullable(),
          updated_at: z.string(),
        }),
      )
      .openapi({ description: "The recorded withdrawals of the operation, one per provider." }),
  })
  .openapi("OperatorQueuedPayout");

type OperatorQueuedPayoutJson = z.infer<typeof OperatorQueuedPayoutJson>;

function payoutJson(p: OperatorQueuedPayout): OperatorQueuedPayoutJson {
  return {
    operation_id: p.operationId,
    shop_id: p.shopId,
    merchant_operation_id: p.merchantOperationId,
    amount: p.amount,
    currency: p.currency,
    created_at: p.createdAt,
    operator_queued_at: p.operatorQueuedAt,
    unresolved_provider: p.unresolvedProvider ?? null,
    passed_providers: p.passedProviders,
    reconcile_checks: p.reconcileChecks,
    next_check_at: p.nextCheckAt ?? null,
    withdrawals: p.withdrawals.map((w) => ({
      provider: w.provider,
      status: w.status,
      attempts: w.attempts,
      last_error: w.lastError ?? null,
      updated_at: w.updatedAt,
    })),
  };
}

const list = createRoute({
  method: "get",
  path: "/payouts/operator-queue",
  tags,
  security,
  summary: "Payouts awaiting an operator's decision: their provider's answer stayed unknown past the horizon",
  description:
    "Payouts still `routing` whose provider neither declined them nor confirmed a withdrawal of their " +
    "key for longer than `PAYOUT_OPERATOR_HORIZON_MS` (default 24 h), oldest in the queue first. The " +
    "create answered `503` with the reserve held; the reconciler goes on asking the provider, and no " +
    "other provider is ever asked while this one may pay it. The list is read-only: decide with the " +
    "provider's own evidence (see docs/operations.md); the payout leaves the queue when its provider answers.",
  request: {
    query: z.object({
      limit: z.coerce
        .number({ error: "limit must be a number" })
        .int({ error: "limit must be an integer" })
        .min(1, { error: "limit must be 1..500" })
        .max(500, { error: "limit must be 1..500" })
        .default(100),
    }),
  },
  responses: {
    200: jsonResponse(z.object({ payouts: z.array(OperatorQueuedPayoutJson) }), "The operator queue."),
    ...errorResponses(400, 401, 503),
  },
});

/** `GET /admin/v1/payouts/operator-queue`. */
export function adminOperatorQueueRoutes(clients: EdgeClients) {
  return openApiApp().openapi(list, async (c) => {
    const { limit } = c.req.valid("query");
    const res = await clients.operations.listOperatorQueue({ limit }, { timeoutMs: CALL_TIMEOUT_MS });
    return c.json({ payouts: res.payouts.map(payoutJson) }, 200);
  });
}
