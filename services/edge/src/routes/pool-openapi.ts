import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import type { EdgeEnv } from "../env.ts";
import { errorResponses, jsonRequest, jsonResponse, LinkOperationSchema } from "../schemas.ts";
import { availabilityQuery, recommendationsBody } from "./availability.ts";
import { flexibleLinkBody } from "./flexible.ts";

const Interval = z.object({ min_amount: z.string(), max_amount: z.string() });

export const AvailabilitySchema = z
  .object({
    method: z.string(),
    currency: z.string(),
    evaluated_at: z
      .string()
      .openapi({ description: "Earliest source observation; not a validity deadline." }),
    coverage: z.enum(["full", "partial", "none"]),
    reserved: z.literal(false),
    truncated: z.boolean(),
    intervals: z.array(Interval).openapi({ description: "Sorted, disjoint, inclusive; at most 200." }),
  })
  .openapi("Availability");

export const RecommendationsSchema = AvailabilitySchema.extend({
  recommendations: z.array(z.object({ amount: z.string(), delta: z.string() })),
}).openapi("Recommendations");

const FlexibleSelectionSchema = z
  .object({
    operation_id: z.string().openapi({ format: "uuid" }),
    status: z.enum(["amount_selection", "rejected"]),
    method: z.string(),
    currency: z.string(),
    recommended_amount: z.string(),
    payment_url: z
      .string()
      .nullable()
      .openapi({ description: "`{pay_url}/<operation_id>?k=<k>`; null when rejected." }),
    expires_at: z.string().optional().openapi({ description: "The link lifetime (amount_selection)." }),
  })
  .openapi("FlexibleLinkSelection");

/** The OpenAPI description of the pool's merchant endpoints. */
export function describePoolRoutes(app: OpenAPIHono<EdgeEnv>): void {
  const registry = app.openAPIRegistry;
  const security = [{ ApiKey: [] }];
  const tags = ["merchant API"];
  const readErrors = errorResponses(400, 401, 403, 404, 412, 429, 503);
  const readNote =
    "Advisory, nothing is reserved; `Cache-Control: no-store`. 5 requests per second per shop per edge " +
    "replica shared with the other availability endpoint (429 with Retry-After); one active read per " +
    "matching replica (a second gets 503 read_capacity_exhausted at once); 2 s budget (503). 412: no payin " +
    "route (route_not_configured) or no payin pricing at either bound (pricing_not_configured). Coverage: " +
    "`full` when the payin route is only the pool, `partial` with other providers, `none` without the pool.";
  registry.registerPath({
    method: "get",
    path: "/v1/payment/availability",
    tags,
    security,
    summary: "Amounts the self-matching pool can take now",
    description: readNote,
    request: { query: availabilityQuery },
    responses: { 200: jsonResponse(AvailabilitySchema, "The intervals."), ...readErrors },
  });
  registry.registerPath({
    method: "post",
    path: "/v1/payment/recommendations",
    tags,
    security,
    summary: "Amounts near a desired amount",
    description: `${readNote} Ordering: exact free remainders, then distance, then the lower amount.`,
    request: { body: jsonRequest(recommendationsBody) },
    responses: { 200: jsonResponse(RecommendationsSchema, "The recommendations."), ...readErrors },
  });
  registry.registerPath({
    method: "post",
    path: "/v1/payment/link/flexible",
    tags,
    security,
    summary: "Create a flexible payment link (self-matching pool only)",
    description:
      "Recommended amount available: the payment, with `payment_url` carrying `k`. Otherwise, with amounts " +
      "available: `amount_selection` (no payment yet; the state read answers 404 until the payer confirms " +
      "an amount on the page). Nothing available: `rejected`, nothing created. Without the shop's opt-in: an " +
      "ordinary payment with `payment_url` null. 412 flexible_route_not_pool when the payin route has any " +
      "provider besides the pool. A retry with the same merchant_operation_id answers the same link.",
    request: { body: jsonRequest(flexibleLinkBody) },
    responses: {
      200: jsonResponse(z.union([LinkOperationSchema, FlexibleSelectionSchema]), "The payment or the link."),
      ...errorResponses(400, 401, 403, 412, 413, 415, 503),
    },
  });
}
