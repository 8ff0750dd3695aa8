import { createHash } from "node:crypto";
import { createProblem } from "@gw/api";
import { type Decimal, METHODS, type Method, parseRequestAmount } from "@gw/money";
import type { CreateOperationRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { stringify } from "safe-stable-stringify";
import { v5 as uuidv5 } from "uuid";
import { BANKS_BY_CURRENCY } from "./banks.ts";
import { IdempotencyConflictError, RouteNotConfiguredError, ValidationError } from "./lifecycle/errors.ts";
import type { OperationRow } from "./model.ts";

/** Namespace of operation ids derived from (shop, merchant_operation_id). */
const OPERATION_NAMESPACE = "6f1c2a7e-3b5d-4c1a-9e8f-0a1b2c3d4e5f";

/**
 * The operation id of (shop, merchant_operation_id). Deriving it makes a cancel that
 * arrives before its create, a retried create and the create itself agree on one id.
 */
export const operationIdFor = (shopId: string, mop: string) =>
  uuidv5(`${shopId}\n${mop}`, OPERATION_NAMESPACE);

/** What a create request means, validated; the basis of the idempotency hash. */
export interface CreateInput {
  type: "payment" | "payout";
  shopId: string;
  merchantId: string;
  mop: string;
  clientId: string;
  clientIp: string | undefined;
  method: string;
  amount: string;
  currency: string;
  number: string | undefined;
  name: string | undefined;
  bankname: string | undefined;
}

const invalid = (field: string, message: string) => new ValidationError(message, field);

/**
 * Validates a create request by the merchant API's rules (libs/api create.ts, which the edge
 * calls too, so both answer a bad request with the same message); this keeps the service
 * safe on its own. Only the bank dictionary is operations' own.
 */
export function parseCreate(req: CreateOperationRequest): CreateInput {
  const shopId = req.scope?.shopId ?? "";
  const merchantId = req.scope?.merchantId ?? "";
  if (!shopId || !merchantId) throw invalid("scope", "scope is required");
  if (req.type !== "payment" && req.type !== "payout")
    throw invalid("type", "type must be payment or payout");
  const problem = createProblem(req.type, {
    merchant_operation_id: req.merchantOperationId,
    client_id: req.clientId,
    client_ip: req.clientIp || undefined,
    method: req.method,
    amount: req.amount,
    currency: req.currency,
    number: req.number,
    name: req.name,
    bankname: req.bankname,
  });
  if (problem) throw invalid(problem.field, problem.message);
  // createProblem has checked the method, the amount and the payout's number and bank.
  const amount = parseRequestAmount(req.amount) as Decimal;
  const rail = METHODS[req.method as Method].rail;
  let number: string | undefined;
  let name: string | undefined;
  let bankname: string | undefined;
  if (req.type === "payout") {
    number = req.number?.trim();
    name = req.name?.trim() || "аноним";
    if (rail === "phone") {
      bankname = req.bankname?.trim();
      if (!bankname || !BANKS_BY_CURRENCY[req.currency]?.[bankname])
        throw invalid("bankname", "bankname is not a bank code of the method currency");
    }
  }
  return {
    type: req.type,
    shopId,
    merchantId,
    mop: req.merchantOperationId,
    clientId: req.clientId,
    clientIp: req.clientIp || undefined,
    method: req.method,
    amount: amount.toFixed(2),
    currency: req.currency,
    number,
    name,
    bankname,
  };
}

/** sha256 of the canonical request: what makes "the same body" for idempotency. */
export function requestHash(input: CreateInput): string {
  const { shopId: _s, merchantId: _m, ...body } = input;
  return createHash("sha256")
    .update(stringify(body) ?? "")
    .digest("hex");
}

/** The columns of a create's row that its request gives: the key, the id, the hash and the request. */
export type RequestColumns = Pick<
  OperationRow,
  | "id"
  | "shop_id"
  | "merchant_id"
  | "merchant_operation_id"
  | "request_hash"
  | "type"
  | "method"
  | "currency"
  | "expected_amount"
  | "client_id"
  | "client_ip"
  | "number"
  | "name"
  | "bankname"
>;

/** The columns of the row a create claims that its request gives (its quote adds the rest). */
export const requestColumns = (input: CreateInput, hash: string): RequestColumns => ({
  id: operationIdFor(input.shopId, input.mop),
  shop_id: input.shopId,
  merchant_id: input.merchantId,
  merchant_operation_id: input.mop,
  request_hash: hash,
  type: input.type,
  method: input.method,
  currency: input.currency,
  expected_amount: input.amount,
  client_id: input.clientId,
  client_ip: input.clientIp ?? null,
  number: input.type === "payout" ? (input.number ?? null) : null,
  name: input.type === "payout" ? (input.name ?? null) : null,
  bankname: input.type === "payout" ? (input.bankname ?? null) : null,
});

export const conflict = () =>
  new IdempotencyConflictError(
    "merchant_operation_id was already used with a different request",
    "merchant_operation_id",
  );

export const routeNotConfigured = (direction: string, method: string) =>
  new RouteNotConfiguredError(direction, method);
