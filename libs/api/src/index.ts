import type { Operation, ReceiptItem } from "@gw/proto/gateway/operations/v1/operations_pb";

/** The operation object of the spec, as JSON: snake_case, absent fields omitted. */
export type OperationJson = Record<string, unknown>;

/**
 * Renders an operation as the merchant sees it, in the field order of the spec's
 * "Operation object" table. The edge's responses and the webhook payloads both come from
 * here, so the two can never disagree. Internal ids (shop, provider, route) are not part
 * of the proto message, so they cannot leak through this function.
 */
export function operationJson(op: Operation): OperationJson {
  const out: OperationJson = {
    operation_id: op.operationId,
    merchant_operation_id: op.merchantOperationId,
    type: op.type,
    status: op.status,
    method: op.method,
    expected_amount: op.expectedAmount,
  };
  if (op.type === "payment") out.actual_amount = op.actualAmount;
  out.currency = op.currency;
  const optional: [string, string | undefined][] = [
    ["fx_source", op.fxSource],
    ["fx_rate", op.fxRate],
    ["recorded_currency", op.recordedCurrency],
    ["recorded_amount", op.recordedAmount],
    ["settlement_amount", op.settlementAmount],
    ["settlement_currency", op.settlementCurrency],
    ["commission_amount", op.commissionAmount],
  ];
  for (const [key, value] of optional) if (value !== undefined) out[key] = value;
  if (op.externalConfirmation) {
    out.external_confirmation = {
      required: op.externalConfirmation.required,
      methods: [...op.externalConfirmation.methods],
    };
  }
  const tail: [string, string | undefined][] = [
    ["number", op.number],
    ["name", op.name],
    ["bankname", op.bankname],
    ["bankname_details", op.banknameDetails],
    ["expires_at", op.expiresAt],
  ];
  for (const [key, value] of tail) if (value !== undefined) out[key] = value;
  if (op.status === "manual_check") out.manual_check_reason = op.manualCheckReason || "potential_fake";
  out.created_at = op.createdAt;
  out.updated_at = op.updatedAt;
  return out;
}

/**
 * A receipt item of the spec. `amount` is a JSON number there; every amount we hold has
 * at most 16 integer digits and scale 2, which a double prints back exactly.
 */
export function receiptItemJson(item: ReceiptItem) {
  return {
    id: item.id,
    amount: Number(item.amount),
    completed_at: item.completedAt,
    receipt_url: item.receiptUrl ?? null,
  };
}

/** The get_operation_state body: the operation plus receipts and their evidence status. */
export function operationStateJson(
  op: Operation,
  receipts: ReceiptItem[],
  evidenceStatus: string,
): OperationJson {
  return {
    ...operationJson(op),
    receipts: receipts.map(receiptItemJson),
    receipt_evidence_status: evidenceStatus,
  };
}
export {
  amountProblem,
  boundsOrderProblem,
  type CreateFields,
  clientIpProblem,
  createProblem,
  currencyProblem,
  type FlexibleLinkFields,
  flexibleBoundsProblem,
  flexibleLinkProblem,
  methodCurrencyProblem,
  methodProblem,
  optionalProblem,
  type Problem,
  payoutDestinationProblem,
  rangeProblem,
  requiredProblem,
} from "./create.ts";
export {
  EDGE_ERROR_CODES,
  type EdgeErrorCode,
  type ErrorAudience,
  type ErrorStatus,
  errorCodesFor,
  isPublicErrorCode,
  PUBLIC_ERRORS,
  type PublicErrorCode,
  type PublicErrorSpec,
  reaches,
  SERVICE_ERROR_CODES,
  type ServiceErrorCode,
  statusesOf,
} from "./errors.ts";
export {
  FIELD_RULES,
  type FieldRule,
  fieldProblem,
  fieldRuleText,
  ruleProblem,
  type TextField,
} from "./fields.ts";
