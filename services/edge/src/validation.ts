import { isIP } from "node:net";
import { FIELD_RULES, fieldProblem, fieldRuleText, ruleProblem, type TextField } from "@gw/api";
import { CURRENCIES, isCurrency, isMethod, METHODS, parseRequestAmount } from "@gw/money";
import { z } from "@hono/zod-openapi";
import { type ApiError, invalidField } from "./errors.ts";
import { isUuid } from "./store.ts";

/**
 * Request schemas of the `/v1` API, one per spec table. They double as the OpenAPI
 * description of those requests. Each schema reports its first problem with the field
 * named; extra fields (`merchant_id` and `shop_id` among them) are dropped, because scope
 * comes from the API key only.
 */

/** The longest `reason` the cancel endpoint stores, in UTF-8 bytes (not characters). */
export const CANCEL_REASON_MAX_BYTES = FIELD_RULES.reason.maxBytes ?? 2048;

const typeMessage = (field: string, what: string) => (issue: { input?: unknown }) =>
  issue.input === undefined ? `${field} is required` : `${field} must be ${what}`;

/** A required string that must not be empty. */
const requiredText = (field: string) =>
  z.string({ error: typeMessage(field, "a string") }).min(1, { error: `${field} must not be empty` });

/** An optional string; JSON null counts as absent. */
const optionalText = (field: string) => z.string({ error: typeMessage(field, "a string") }).nullish();

/** The field's length and character rule (libs/api fields.ts), on a string or absent value. */
function ruleOf(field: TextField) {
  return (value: string | null | undefined, ctx: z.RefinementCtx) => {
    const problem = value == null ? undefined : fieldProblem(field, value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  };
}

/**
 * An admin API text field's rule (names, operators, reasons): at most `maxChars`
 * characters, no NUL, well-formed Unicode (libs/api fields.ts `ruleProblem`).
 */
export function freeText(field: string, maxChars: number) {
  return (value: string, ctx: z.RefinementCtx) => {
    const problem = ruleProblem(field, { kind: "text", maxChars }, value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  };
}

/** The OpenAPI description of a ruled field: what it is, then its rule. */
const ruleDoc = (field: TextField, what: string) => ({
  description: `${what} ${fieldRuleText(field)}`,
  ...(FIELD_RULES[field].maxChars !== undefined ? { maxLength: FIELD_RULES[field].maxChars } : {}),
});

/** A required identifier or text field under its rule. */
export const requiredField = (field: TextField, what: string) =>
  requiredText(field).superRefine(ruleOf(field)).openapi(ruleDoc(field, what));

/** An optional (nullable) identifier or text field under its rule. */
export const optionalField = (field: TextField, what: string) =>
  optionalText(field).superRefine(ruleOf(field)).openapi(ruleDoc(field, what));

const amountText = (field: string) =>
  z
    .string({ error: typeMessage(field, "a decimal string") })
    .refine((text) => parseRequestAmount(text)?.gt(0) ?? false, {
      error: `${field} must be a decimal string with two decimal places, greater than 0 (for example "1000.00")`,
    });

const methods = Object.keys(METHODS) as [keyof typeof METHODS, ...(keyof typeof METHODS)[]];
const currencies = Object.keys(CURRENCIES) as [keyof typeof CURRENCIES, ...(keyof typeof CURRENCIES)[]];

/** The body of `POST /v1/payment`, `/v1/payout` and `/v1/payment/link`. */
export const createOperationBody = z
  .object({
    merchant_operation_id: requiredField(
      "merchant_operation_id",
      "Idempotency key chosen by the merchant.",
    ).openapi({ example: "order-1001" }),
    client_id: requiredField("client_id", "End-user identifier.").openapi({ example: "user-42" }),
    client_ip: optionalText("client_ip")
      .refine((ip) => ip == null || isIP(ip) !== 0, { error: "client_ip must be an IPv4 or IPv6 address" })
      .openapi({ description: "Client IP address, used for antifraud.", example: "203.0.113.7" }),
    method: z
      .string({ error: typeMessage("method", "a string") })
      .refine(isMethod, { error: `method must be one of ${methods.join(", ")}` })
      .openapi({ description: "Logical payment method.", enum: methods, example: "WT_RUB_C2C" }),
    amount: amountText("amount").openapi({ description: "Decimal string, scale 2.", example: "1000.00" }),
    currency: z
      .string({ error: typeMessage("currency", "a string") })
      .refine(isCurrency, { error: `currency must be one of ${currencies.join(", ")}` })
      .openapi({ description: "ISO 4217 code.", enum: currencies, example: "RUB" }),
    number: optionalField("number", "Destination card or phone number; consulted only for payouts."),
    name: optionalField("name", "Holder or recipient name."),
    bankname: optionalField(
      "bankname",
      "Destination bank code; required for WT_RUB_PHONE payouts, ignored for card rails.",
    ),
  })
  .superRefine((body, ctx) => {
    const method = METHODS[body.method as keyof typeof METHODS];
    if (method && isCurrency(body.currency) && method.currency !== body.currency) {
      ctx.addIssue({
        code: "custom",
        path: ["method"],
        message: `method ${body.method} does not belong to currency ${body.currency}`,
      });
    }
  })
  .openapi("CreateOperationRequest");
export type CreateOperationBody = z.infer<typeof createOperationBody>;

/** Payout-only rules of the spec's payout table, on top of the shared create schema. */
export function checkPayoutDestination(body: CreateOperationBody): void {
  if (!body.number) throw invalidField("number", "number is required for payouts");
  const rail = METHODS[body.method as keyof typeof METHODS]?.rail;
  if (rail === "phone" && !body.bankname) {
    throw invalidField("bankname", `bankname is required for ${body.method} payouts`);
  }
}

const operationIdText = z
  .string({ error: typeMessage("operation_id", "a string") })
  .refine(isUuid, { error: "operation_id must be a UUID" })
  .nullish()
  .openapi({ description: "Server-issued id (UUID).", format: "uuid" });
const merchantOperationIdText = optionalField(
  "merchant_operation_id",
  "The idempotency key used on create.",
).refine((id) => id == null || id.length > 0, { error: "merchant_operation_id must not be empty" });

/** Exactly one of the two identifiers, as `get_operation_state` and `cancel_operation` take them. */
export type OperationRef = { operationId: string } | { merchantOperationId: string };

function exactlyOneId(body: {
  operation_id?: string | null;
  merchant_operation_id?: string | null;
}): OperationRef {
  const byId = body.operation_id != null;
  const byMerchantId = body.merchant_operation_id != null;
  if (byId === byMerchantId) {
    throw invalidField(
      byId ? "operation_id" : undefined,
      byId
        ? "send exactly one of operation_id or merchant_operation_id, not both"
        : "one of operation_id or merchant_operation_id is required",
    );
  }
  return byId
    ? { operationId: body.operation_id!.toLowerCase() }
    : { merchantOperationId: body.merchant_operation_id! };
}

/** The body of `POST /v1/get_operation_state`. */
export const operationRefBody = z
  .object({ operation_id: operationIdText, merchant_operation_id: merchantOperationIdText })
  .openapi("OperationRefRequest", { description: "Exactly one of operation_id or merchant_operation_id." });

/** The body of `POST /v1/cancel_operation`. */
export const cancelOperationBody = z
  .object({
    operation_id: operationIdText,
    merchant_operation_id: merchantOperationIdText,
    reason: optionalField("reason", 'Audit-log reason; empty uses "cancel".'),
  })
  .openapi("CancelOperationRequest", {
    description: "Exactly one of operation_id or merchant_operation_id.",
  });

/** Turns the first zod issue into the one 400, naming the field. */
export function validationError(error: z.ZodError): ApiError {
  const issue = error.issues[0];
  const field = issue?.path.length ? issue.path.map(String).join(".") : undefined;
  return invalidField(field, issue?.message ?? "invalid request");
}

/** Validates a request body (absent counts as `{}`) or throws the one 400. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body ?? {});
  if (!result.success) throw validationError(result.error);
  return result.data;
}

/** Parses the get_operation_state body into exactly one identifier. */
export function parseOperationRef(body: unknown): OperationRef {
  return exactlyOneId(parseBody(operationRefBody, body));
}

/** Parses the cancel body into one identifier and the reason (empty becomes "cancel"). */
export function parseCancel(body: unknown): { ref: OperationRef; reason: string } {
  const parsed = parseBody(cancelOperationBody, body);
  return { ref: exactlyOneId(parsed), reason: parsed.reason || "cancel" };
}
