import { operationJson } from "@gw/api";
import type { Review } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { createRoute, z } from "@hono/zod-openapi";
import { CALL_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import { errorResponses, jsonRequest, jsonResponse, OperationSchema, openApiApp } from "../schemas.ts";

/**
 * Admin: the manual-check queue and an operator's decision on a payment in manual_check.
 * The decision (approve with the amount that arrived, or reject), the operator and the
 * reason are recorded by the receipts service as the audit row; operations moves the
 * payment to `completed` or `rejected` with its webhook.
 */

const security = [{ AdminBearer: [] }];
const tags = ["admin: receipt review"];

const text = (field: string, max: number) =>
  z
    .string({ error: (i) => (i.input === undefined ? `${field} is required` : `${field} must be a string`) })
    .trim()
    .min(1, { error: `${field} must not be empty` })
    .max(max, { error: `${field} must be at most ${max} characters` });

const ReviewBody = z
  .object({
    decision: z.enum(["approve", "reject"], { error: "decision must be approve or reject" }),
    amount: z
      .string({ error: "amount must be a decimal string" })
      .regex(/^(0|[1-9]\d{0,15})(\.\d{1,2})?$/, {
        error: 'amount must be a decimal string such as "1500.00"',
      })
      .refine((a) => !/^0(\.0*)?$/.test(a), { error: "amount must be greater than 0" })
      .optional()
      .openapi({ description: "With approve (required): the amount that actually arrived." }),
    reason: text("reason", 2048).openapi({ description: "Why: kept in the audit record." }),
    operator: text("operator", 256).openapi({ description: "Who decided: kept in the audit record." }),
  })
  .superRefine((body, ctx) => {
    if (body.decision === "approve" && body.amount === undefined)
      ctx.addIssue({ code: "custom", path: ["amount"], message: "approve needs the amount that arrived" });
    if (body.decision === "reject" && body.amount !== undefined)
      ctx.addIssue({ code: "custom", path: ["amount"], message: "reject takes no amount" });
  })
  .openapi("ReviewDecision");

const ManualCheckSchema = z
  .object({
    shop_id: z.string().openapi({ format: "uuid" }),
    operation: OperationSchema,
    receipt_id: z.string().nullable().openapi({ description: "The review waiting for the decision." }),
    findings: z.array(
      z.object({
        check: z.string().openapi({ example: "incremental_update" }),
        outcome: z.string().openapi({ example: "potential_fake" }),
        detail: z.string(),
      }),
    ),
    review: z.nullable(
      z
        .object({
          actual_amount: z.string().nullable(),
          layout: z.string().nullable(),
          transaction_id: z.string().nullable(),
          submitted_at: z.string(),
          sha256: z.string(),
        })
        .openapi({
          description:
            "What the receipt says (receipts service); null without a receipt or when it cannot be asked now.",
        }),
    ),
  })
  .openapi("ManualCheck");

const routes = {
  queue: createRoute({
    method: "get",
    path: "/manual-checks",
    tags,
    security,
    summary: "Payments waiting for an operator (manual_check), oldest first",
    request: {
      query: z.object({
        shop_id: z.uuid({ error: "shop_id must be a UUID" }).optional(),
        limit: z.coerce
          .number({ error: "limit must be a number" })
          .int({ error: "limit must be an integer" })
          .min(1, { error: "limit must be 1..200" })
          .max(200, { error: "limit must be 1..200" })
          .default(50),
      }),
    },
    responses: {
      200: jsonResponse(z.object({ items: z.array(ManualCheckSchema) }), "The queue."),
      ...errorResponses(400, 401, 503),
    },
  }),
  review: createRoute({
    method: "post",
    path: "/operations/{operation_id}/review",
    tags,
    security,
    summary: "Approve (with the amount that arrived) or reject a payment in manual_check",
    description:
      "Recorded with the operator and the reason. The same decision again answers `replayed: true`; " +
      "another decision after one was made is `412 receipt_already_reviewed`; a payment not in " +
      "manual_check is `412 not_in_manual_check`.",
    request: {
      params: z.object({
        operation_id: z
          .uuid({ error: "operation_id must be a UUID" })
          .openapi({ param: { name: "operation_id", in: "path" } }),
      }),
      body: jsonRequest(ReviewBody),
    },
    responses: {
      200: jsonResponse(
        z.object({ operation: OperationSchema, replayed: z.boolean() }),
        "The decided payment.",
      ),
      ...errorResponses(400, 401, 404, 412, 503),
    },
  }),
};

const reviewJson = (r: Review | null) =>
  r && {
    actual_amount: r.actualAmount ?? null,
    layout: r.layout ?? null,
    transaction_id: r.transactionId ?? null,
    submitted_at: r.submittedAt,
    sha256: r.sha256,
  };

export function adminReviewRoutes(clients: EdgeClients) {
  const opts = { timeoutMs: CALL_TIMEOUT_MS * 3 };
  return openApiApp()
    .openapi(routes.queue, async (c) => {
      const q = c.req.valid("query");
      const res = await clients.operations.listManualChecks({ limit: q.limit, shopId: q.shop_id }, opts);
      const reviews = await Promise.all(
        res.items.map(async (i) => {
          if (!i.receiptId) return null;
          try {
            const r = await clients.receipts.getReview(
              { shopId: i.shopId, id: { case: "receiptId", value: i.receiptId } },
              { timeoutMs: CALL_TIMEOUT_MS },
            );
            return r.review ?? null;
          } catch {
            // The queue is still worth showing without what one receipt says.
            return null;
          }
        }),
      );
      return c.json(
        {
          items: res.items.map((i, n) => ({
            shop_id: i.shopId,
            operation: operationJson(i.operation!) as z.infer<typeof OperationSchema>,
            receipt_id: i.receiptId ?? null,
            findings: i.findings.map((f) => ({ check: f.check, outcome: f.outcome, detail: f.detail })),
            review: reviewJson(reviews[n] ?? null),
          })),
        },
        200,
      );
    })
    .openapi(routes.review, async (c) => {
      const body = c.req.valid("json");
      const res = await clients.operations.resolveReview(
        {
          operationId: c.req.valid("param").operation_id,
          decision: body.decision,
          amount: body.amount,
          operator: body.operator,
          reason: body.reason,
        },
        opts,
      );
      return c.json(
        {
          operation: operationJson(res.operation!) as z.infer<typeof OperationSchema>,
          replayed: res.replayed,
        },
        200,
      );
    });
}
