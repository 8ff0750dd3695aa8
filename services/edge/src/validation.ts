import {
  amountProblem,
  clientIpProblem,
  currencyProblem,
  FIELD_RULES,
  fieldRuleText,
  methodCurrencyProblem,
  methodProblem,
  optionalProblem,
  payoutDestinationProblem,
  requiredProblem,
  ruleProblem,
  type TextField,
} from "@gw/api";
import { CURRENCIES, METHODS } from "@gw/money";
import { z } from "@hono/zod-openapi";
import { type ApiError, invalidField } from "./errors.ts";
import { isUuid } from "./store.ts";

/**
 * Request schemas of the `/v1` API, one per spec table. They double as the OpenAPI
 * description of those requests. Each schema reports its first problem with the field
 * named; extra fields (`merchant_id` and `shop_id` among them) are dropped, because scope
 * comes from the API key only. The rules and their messages are libs/api's (create.ts,
 * fields.ts), which operations' own check of a create calls too.
 */

/** The longest `reason` the cancel endpoint stores, in UTF-8 bytes (not characters). */
export const CANCEL_REASON_MAX_BYTES = FIELD_RULES.reason.maxBytes ?? 2048;

/** "is required" when absent, else "must be <what>": the message of a JSON type mismatch. */
export const typeMessage = (field: string, what: string) => (issue: { input?: unknown }) =>
  issue.input === undefined ? `${field} is required` : `${field} must be ${what}`;

/** A refinement that adds the issue a libs/api rule finds, if any. */
const rule =
  <T>(problem: (value: T) => string | undefined) =>
  (value: T, ctx: z.RefinementCtx) => {
    const message = problem(value);
    if (message) ctx.addIssue({ code: "custom", message });
  };

/** A required string that must not be empty (the OpenAPI document says `minLength: 1`). */
const requiredText = (field: TextField) =>
  z
    .string({ error: typeMessage(field, "a string") })
    .min(1, { error: requiredProblem(field, "") })
    .superRefine(rule((value: string) => requiredProblem(field, value)));

/** An optional string; JSON null counts as absent. */
const optionalText = (field: string) => z.string({ error: typeMessage(field, "a string") }).nullish();

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
  requiredText(field).openapi(ruleDoc(field, what));

/** An optional (nullable) identifier or text field under its rule. */
export const optionalField = (field: TextField, what: string) =>
  optionalText(field)
    .superRefine(rule((value: string | null | undefined) => optionalProblem(field, value)))
    .openapi(ruleDoc(field, what));

/** An amount field: a decimal string of scale 2, greater than 0. */
export const amountText = (field: string) =>
  z
    .string({ error: typeMessage(field, "a decimal string") })
    .superRefine(rule((text: string) => amountProblem(field, text)));

/** The methods and currencies, for the OpenAPI document's enums. */
export const methods = Object.keys(METHODS) as [keyof typeof METHODS, ...(keyof typeof METHODS)[]];
export const currencies = Object.keys(CURRENCIES) as [
  keyof typeof CURRENCIES,
  ...(keyof typeof CURRENCIES)[],
];

/** `method`: one of the gateway's methods. */
export const methodText = () =>
  z.string({ error: typeMessage("method", "a string") }).superRefine(rule(methodProblem));

/** `currency`: one of the gateway's currencies. */
export const currencyText = () =>
  z.string({ error: typeMessage("currency", "a string") }).superRefine(rule(currencyProblem));

/** `client_ip`: absent, or an IPv4 or IPv6 address. */
export const clientIpText = () => optionalText("client_ip").superRefine(rule(clientIpProblem));

/** The method belongs to the currency: an issue on `method` when it does not. */
export function methodOfCurrency(body: { method: string; currency: string }, ctx: z.RefinementCtx): void {
  const message = methodCurrencyProblem(body.method, body.currency);
  if (message) ctx.addIssue({ code: "custom", path: ["method"], message });
}

/** The body of `POST /v1/payment`, `/v1/payout` and `/v1/payment/link`. */
export const createOperationBody = z
  .object({
    merchant_operation_id: requiredField(
      "merchant_operation_id",
      "Idempotency key chosen by the merchant.",
    ).openapi({ example: "order-1001" }),
    client_id: requiredField("client_id", "End-user identifier.").openapi({ example: "user-42" }),
    client_ip: clientIpText().openapi({
      description: "Client IP address, used for antifraud.",
      example: "203.0.113.7",
    }),
    method: methodText().openapi({
      description: "Logical payment method.",
      enum: methods,
      example: "WT_RUB_C2C",
    }),
    amount: amountText("amount").openapi({ description: "Decimal string, scale 2.", example: "1000.00" }),
    currency: currencyText().openapi({ description: "ISO 4217 code.", enum: currencies, example: "RUB" }),
    number: optionalField("number", "Destination card or phone number; consulted only for payouts."),
    name: optionalField("name", "Holder or recipient name."),
    bankname: optionalField(
      "bankname",
      "Destination bank code; required for WT_RUB_PHONE payouts, ignored for card rails.",
    ),
  })
  .superRefine(methodOfCurrency)
  .openapi("CreateOperationRequest");
export type CreateOperationBody = z.infer<typeof createOperationBody>;

/** Payout-only rules of the spec's payout table, on top of the shared create schema. */
export function checkPayoutDestination(body: CreateOperationBody): void {
  const problem = payoutDestinationProblem(body);
  if (problem) throw invalidField(problem.field, problem.message);
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
