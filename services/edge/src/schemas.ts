import { errorCodesFor } from "@gw/api";
import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { EdgeEnv } from "./env.ts";
import { validationError } from "./validation.ts";

/**
 * Response schemas and helpers shared by the OpenAPI description of every route. The
 * runtime renders responses with `@gw/api`; these schemas describe that output.
 */

/**
 * The codes of the merchant and admin APIs, named in the `code` property's description and
 * deliberately not an `enum`: a newer gateway may add codes, and a client generated from a
 * closed enum would reject them (the SDK types `code` as any string for the same reason).
 */
const DOCUMENTED_CODES = [...new Set([...errorCodesFor("merchant"), ...errorCodesFor("admin")])];

export const ErrorBodySchema = z
  .object({
    error: z.object({
      code: z.string().openapi({
        description:
          "The error's code. Documented today (info.description, Errors): " +
          `${DOCUMENTED_CODES.map((c) => `\`${c}\``).join(", ")}. ` +
          "Not a closed list: a newer gateway may answer another code; act on the status then.",
        example: "validation_failed",
      }),
      message: z.string().openapi({ example: "amount is required" }),
      field: z.string().optional().openapi({ example: "amount" }),
    }),
    request_id: z.string().openapi({ example: "0b8f3f0e-6c1e-4a59-a0c3-0d8b3d0a3c11" }),
  })
  .openapi("Error");

const STATUS_DESCRIPTIONS: Record<number, string> = {
  400: "Invalid JSON, or a field missing or malformed (`error.field` names it).",
  401: "Missing or invalid credentials.",
  403: "The key is not authorized.",
  404: "Not found in the caller's scope.",
  405: "Method not allowed on this path.",
  412: "Precondition failed (for example an idempotency conflict).",
  413: "Request body too large.",
  415: "Request body is not application/json.",
  429: "Rate limit exceeded; `Retry-After` says when to retry.",
  500: "Internal error.",
  503: "A dependency is unavailable or the gateway is busy (`overloaded`); retry after `Retry-After` seconds.",
};

/** OpenAPI responses for the given error statuses, all in the one error body. */
export function errorResponses<const S extends number>(...statuses: S[]) {
  const out = {} as Record<
    S,
    { description: string; content: { "application/json": { schema: typeof ErrorBodySchema } } }
  >;
  for (const status of statuses) {
    out[status] = {
      description: STATUS_DESCRIPTIONS[status] ?? "Error.",
      content: { "application/json": { schema: ErrorBodySchema } },
    };
  }
  return out;
}

/** A JSON response of one schema, for route definitions. */
export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/** A JSON request body of one schema, for route definitions. */
export const jsonRequest = <T extends z.ZodType>(schema: T) => ({
  content: { "application/json": { schema } },
});

export const OperationSchema = z
  .object({
    operation_id: z.string().openapi({ format: "uuid" }),
    merchant_operation_id: z.string(),
    type: z.enum(["payment", "payout"]),
    status: z.string().openapi({ example: "pending" }),
    method: z.string(),
    expected_amount: z.string().openapi({ example: "1000.00" }),
    actual_amount: z.string().optional().openapi({ description: "On payments only." }),
    currency: z.string(),
    fx_source: z.string().optional(),
    fx_rate: z
      .string()
      .optional()
      .openapi({
        description:
          "The quoted rate, six decimal places: the rate every figure of the operation is computed with " +
          "(a rate stored with more places is rounded half-up to six at the quote).",
        example: "0.012500",
      }),
    recorded_currency: z.string().optional(),
    recorded_amount: z.string().optional().openapi({
      description: "`actual_amount × fx_rate` as shown, rounded half-up to the recorded currency's scale.",
    }),
    settlement_amount: z
      .string()
      .optional()
      .openapi({
        description:
          "What moves on the shop's balance, in `settlement_currency`: for a payment the converted amount " +
          "less the commission (never below zero), for a payout the amount plus the commission. Before " +
          "terminal the expected figure; at terminal settled on the captured amount. The ledger books " +
          "exactly this figure.",
      }),
    settlement_currency: z.string().optional(),
    commission_amount: z
      .string()
      .optional()
      .openapi({
        description:
          "The shop's commission in `settlement_currency`: percent of the converted amount plus the fixed " +
          "fee of the shop's tier, rounded half-up. For a payment it is capped at the captured (converted) " +
          "amount: when a payer pays less than the fee, the whole captured amount is commission and " +
          "`settlement_amount` is 0, never negative. A payout pays the whole fee on top of its amount.",
      }),
    external_confirmation: z.object({ required: z.boolean(), methods: z.array(z.string()) }).optional(),
    number: z.string().optional(),
    name: z.string().optional(),
    bankname: z.string().optional(),
    bankname_details: z.string().optional(),
    expires_at: z.string().optional(),
    manual_check_reason: z.enum(["potential_fake", "not_terminal"]).optional(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi("Operation");

export const LinkOperationSchema = OperationSchema.extend({
  payment_url: z
    .string()
    .nullable()
    .openapi({ description: "`{pay_url}/<operation_id>`, or null when the hosted page is off." }),
}).openapi("LinkOperation");

export const OperationStateSchema = OperationSchema.extend({
  receipts: z.array(
    z.object({
      id: z.string().openapi({ format: "uuid" }),
      amount: z.number(),
      completed_at: z.string(),
      receipt_url: z.string().nullable(),
    }),
  ),
  receipt_evidence_status: z.enum(["not_ready", "partial", "complete", "unavailable"]),
}).openapi("OperationState");

export const CancelResultSchema = z
  .object({ outcome: z.enum(["cancelled", "already_terminal"]), operation: OperationSchema })
  .openapi("CancelResult");

export const BalancesSchema = z
  .object({
    balances: z.array(
      z.object({
        currency: z.string(),
        balance: z.string(),
        current_minus: z.string(),
        reserved: z.string(),
      }),
    ),
  })
  .openapi("Balances");

/** An OpenAPIHono whose validation failures become the one 400 body naming the field. */
export function openApiApp() {
  return new OpenAPIHono<EdgeEnv>({
    defaultHook: (result) => {
      if (!result.success) throw validationError(result.error);
    },
  });
}
