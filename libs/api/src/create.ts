import { isIP } from "node:net";
import { CURRENCIES, isCurrency, isMethod, METHODS, parseRequestAmount } from "@gw/money";
import { fieldProblem, type TextField } from "./fields.ts";

/**
 * The rules of a create request (`POST /v1/payment`, `/v1/payout`, the link variants),
 * each stated once with its message: the edge's request schemas
 * (services/edge/src/validation.ts, routes/flexible.ts, routes/availability.ts) call the
 * single rules field by field, and operations' own checks (`parseCreate` in
 * services/operations/src/domain/create-request.ts, a flexible link's `parseFlexible` in
 * usecases/flexible/create-link.ts) call `createProblem` and `flexibleLinkProblem`, which
 * run them in the edge's order. So a bad request gets the same `400 validation_failed` message and
 * field from either. What only JSON has (a number where a string belongs) stays in the
 * edge's schemas; what only operations knows (the bank dictionary) stays there.
 */

/** A rule broken: the field at fault and the message of the `400 validation_failed`. */
export interface Problem {
  field: string;
  message: string;
}

const METHOD_NAMES = Object.keys(METHODS).join(", ");
const CURRENCY_NAMES = Object.keys(CURRENCIES).join(", ");

/** A required identifier: present, not empty, and under its field rule (fields.ts). */
export function requiredProblem(field: TextField, value: string | null | undefined): string | undefined {
  if (value == null) return `${field} is required`;
  if (value === "") return `${field} must not be empty`;
  return fieldProblem(field, value);
}

/** An optional identifier or text: absent, or under its field rule. */
export const optionalProblem = (field: TextField, value: string | null | undefined): string | undefined =>
  value == null ? undefined : fieldProblem(field, value);

/** `client_ip`: absent, or an IPv4 or IPv6 address. */
export const clientIpProblem = (ip: string | null | undefined): string | undefined =>
  ip == null || isIP(ip) !== 0 ? undefined : "client_ip must be an IPv4 or IPv6 address";

/** `method`: one of the gateway's methods. */
export const methodProblem = (method: string): string | undefined =>
  isMethod(method) ? undefined : `method must be one of ${METHOD_NAMES}`;

/** `currency`: one of the gateway's currencies. */
export const currencyProblem = (currency: string): string | undefined =>
  isCurrency(currency) ? undefined : `currency must be one of ${CURRENCY_NAMES}`;

/** An amount field: a decimal string of scale 2, greater than 0. */
export const amountProblem = (field: string, text: string): string | undefined =>
  (parseRequestAmount(text)?.gt(0) ?? false)
    ? undefined
    : `${field} must be a decimal string with two decimal places, greater than 0 (for example "1000.00")`;

/** A known method of another currency than the known one sent (field `method`). */
export function methodCurrencyProblem(method: string, currency: string): string | undefined {
  if (!isMethod(method) || !isCurrency(currency) || METHODS[method].currency === currency) return undefined;
  return `method ${method} does not belong to currency ${currency}`;
}

/** A card number of the card rail, and a phone number of the phone rail (blanks trimmed). */
const NUMBER_BY_RAIL = {
  card: { pattern: /^\d{12,19}$/, message: "number must be a card number" },
  phone: { pattern: /^\+?\d{10,15}$/, message: "number must be a phone number" },
} as const;

/** The payout table of the spec: a destination number of the method's rail; a bank for a phone payout. */
export function payoutDestinationProblem(body: {
  method: string;
  number?: string | null | undefined;
  bankname?: string | null | undefined;
}): Problem | undefined {
  const number = body.number?.trim();
  if (!number) return { field: "number", message: "number is required for payouts" };
  const rail = isMethod(body.method) ? METHODS[body.method].rail : undefined;
  if (rail && !NUMBER_BY_RAIL[rail].pattern.test(number))
    return { field: "number", message: NUMBER_BY_RAIL[rail].message };
  if (rail === "phone" && !body.bankname?.trim())
    return { field: "bankname", message: `bankname is required for ${body.method} payouts` };
  return undefined;
}

/** The first of `checks` (field, rule) that a request breaks, in order. */
function firstProblem(checks: [string, () => string | undefined][]): Problem | undefined {
  for (const [field, check] of checks) {
    const message = check();
    if (message) return { field, message };
  }
  return undefined;
}

/** A create request's fields, as the merchant API names them. */
export interface CreateFields {
  merchant_operation_id?: string | null | undefined;
  client_id?: string | null | undefined;
  client_ip?: string | null | undefined;
  method: string;
  amount: string;
  currency: string;
  number?: string | null | undefined;
  name?: string | null | undefined;
  bankname?: string | null | undefined;
}

/** The first rule a create breaks, in the order of the edge's schema; undefined when none. */
export function createProblem(type: "payment" | "payout", body: CreateFields): Problem | undefined {
  const checks: [string, () => string | undefined][] = [
    ["merchant_operation_id", () => requiredProblem("merchant_operation_id", body.merchant_operation_id)],
    ["client_id", () => requiredProblem("client_id", body.client_id)],
    ["client_ip", () => clientIpProblem(body.client_ip)],
    ["method", () => methodProblem(body.method)],
    ["amount", () => amountProblem("amount", body.amount)],
    ["currency", () => currencyProblem(body.currency)],
    ["number", () => optionalProblem("number", body.number)],
    ["name", () => optionalProblem("name", body.name)],
    ["bankname", () => optionalProblem("bankname", body.bankname)],
    ["method", () => methodCurrencyProblem(body.method, body.currency)],
  ];
  return firstProblem(checks) ?? (type === "payout" ? payoutDestinationProblem(body) : undefined);
}

/** A flexible link's request fields (`POST /v1/payment/link/flexible`), as the merchant API names them. */
export interface FlexibleLinkFields {
  merchant_operation_id?: string | null | undefined;
  client_id?: string | null | undefined;
  client_ip?: string | null | undefined;
  method: string;
  currency: string;
  recommended_amount: string;
  min_amount?: string | null | undefined;
  max_amount?: string | null | undefined;
}

/** A flexible link's bounds: `min_amount` not above `max_amount`, the recommended amount within them. */
export function flexibleBoundsProblem(
  body: Pick<FlexibleLinkFields, "recommended_amount" | "min_amount" | "max_amount">,
): Problem | undefined {
  const recommended = parseRequestAmount(body.recommended_amount);
  const min = body.min_amount ? parseRequestAmount(body.min_amount) : undefined;
  const max = body.max_amount ? parseRequestAmount(body.max_amount) : undefined;
  const order = boundsOrderProblem(body);
  if (order) return order;
  if (recommended && ((min && recommended.lt(min)) || (max && recommended.gt(max))))
    return {
      field: "recommended_amount",
      message: "recommended_amount must lie within min_amount and max_amount",
    };
  return undefined;
}

/** The first rule a flexible link's request breaks, in the order of the edge's schema; undefined when none. */
export function flexibleLinkProblem(body: FlexibleLinkFields): Problem | undefined {
  const optionalAmount = (field: "min_amount" | "max_amount") => {
    const text = body[field];
    return text == null ? undefined : amountProblem(field, text);
  };
  const checks: [string, () => string | undefined][] = [
    ["merchant_operation_id", () => requiredProblem("merchant_operation_id", body.merchant_operation_id)],
    ["client_id", () => requiredProblem("client_id", body.client_id)],
    ["client_ip", () => clientIpProblem(body.client_ip)],
    ["method", () => methodProblem(body.method)],
    ["currency", () => currencyProblem(body.currency)],
    ["recommended_amount", () => amountProblem("recommended_amount", body.recommended_amount)],
    ["min_amount", () => optionalAmount("min_amount")],
    ["max_amount", () => optionalAmount("max_amount")],
    ["method", () => methodCurrencyProblem(body.method, body.currency)],
  ];
  return firstProblem(checks) ?? flexibleBoundsProblem(body);
}

/** Two bounds of a range (a flexible link's, an availability read's): `min_amount` not above `max_amount`. */
export function boundsOrderProblem(body: {
  min_amount?: string | null | undefined;
  max_amount?: string | null | undefined;
}): Problem | undefined {
  const min = body.min_amount ? parseRequestAmount(body.min_amount) : undefined;
  const max = body.max_amount ? parseRequestAmount(body.max_amount) : undefined;
  return min && max && min.gt(max)
    ? { field: "min_amount", message: "min_amount must not exceed max_amount" }
    : undefined;
}

/** The range of the availability reads (`GET /v1/payment/availability`, `POST /v1/payment/recommendations`), in the edge schema's order. */
export function rangeProblem(body: {
  method: string;
  currency: string;
  min_amount: string;
  max_amount: string;
}): Problem | undefined {
  const checks: [string, () => string | undefined][] = [
    ["method", () => methodProblem(body.method)],
    ["currency", () => currencyProblem(body.currency)],
    ["min_amount", () => amountProblem("min_amount", body.min_amount)],
    ["max_amount", () => amountProblem("max_amount", body.max_amount)],
    ["method", () => methodCurrencyProblem(body.method, body.currency)],
  ];
  return firstProblem(checks) ?? boundsOrderProblem(body);
}
