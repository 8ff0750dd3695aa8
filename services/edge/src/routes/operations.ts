import { create } from "@bufbuild/protobuf";
import { operationJson, operationStateJson } from "@gw/api";
import { ScopeSchema } from "@gw/proto/gateway/common/v1/common_pb";
import type { Operation } from "@gw/proto/gateway/operations/v1/operations_pb";
import { Hono } from "hono";
import { CALL_TIMEOUT_MS, CREATE_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import type { EdgeEnv, Scope } from "../env.ts";
import { ApiError } from "../errors.ts";
import type { EdgeStore } from "../store.ts";
import {
  type CreateOperationBody,
  checkPayoutDestination,
  createOperationBody,
  type OperationRef,
  parseBody,
  parseCancel,
  parseOperationRef,
} from "../validation.ts";

const scopeMessage = (scope: Scope) =>
  create(ScopeSchema, { merchantId: scope.merchantId, shopId: scope.shopId });

const idOf = (ref: OperationRef) =>
  "operationId" in ref
    ? { case: "operationId" as const, value: ref.operationId }
    : { case: "merchantOperationId" as const, value: ref.merchantOperationId };

/** A downstream answer without the operation it promised is a broken dependency, not a client error. */
function required(op: Operation | undefined): Operation {
  if (!op) throw new ApiError(503, "dependency_unavailable", "a dependency is unavailable, retry later");
  return op;
}

/**
 * The merchant's operation endpoints: create (payment, payout, hosted link), state and
 * cancel. They validate, call OperationsService with the key's scope, and render.
 */
export function operationRoutes(clients: EdgeClients, store: EdgeStore, payUrl: string) {
  const createOperation = async (
    scope: Scope,
    type: "payment" | "payout",
    body: CreateOperationBody,
    hostedPage = false,
  ) => {
    const res = await clients.operations.createOperation(
      {
        scope: scopeMessage(scope),
        type,
        merchantOperationId: body.merchant_operation_id,
        clientId: body.client_id,
        clientIp: body.client_ip ?? undefined,
        method: body.method,
        amount: body.amount,
        currency: body.currency,
        // The destination is consulted only for payouts; on payments it is ignored.
        number: type === "payout" ? (body.number ?? undefined) : undefined,
        bankname: type === "payout" ? (body.bankname ?? undefined) : undefined,
        name: body.name ?? undefined,
        hostedPage,
      },
      { timeoutMs: CREATE_TIMEOUT_MS },
    );
    return required(res.operation);
  };

  return new Hono<EdgeEnv>()
    .post("/payment", async (c) => {
      const body = parseBody(createOperationBody, c.get("body"));
      return c.json(operationJson(await createOperation(c.get("scope"), "payment", body)));
    })
    .post("/payout", async (c) => {
      const body = parseBody(createOperationBody, c.get("body"));
      checkPayoutDestination(body);
      return c.json(operationJson(await createOperation(c.get("scope"), "payout", body)));
    })
    .post("/payment/link", async (c) => {
      const body = parseBody(createOperationBody, c.get("body"));
      const scope = c.get("scope");
      // The setting is read first: operations records whether the payer's page may show
      // this payment, and checkout answers not found for any other.
      const settings = await store.settings(scope.shopId);
      const op = await createOperation(scope, "payment", body, settings.hostedPageEnabled);
      const paymentUrl = settings.hostedPageEnabled ? `${payUrl}/${op.operationId}` : null;
      return c.json({ ...operationJson(op), payment_url: paymentUrl });
    })
    .post("/get_operation_state", async (c) => {
      const ref = parseOperationRef(c.get("body"));
      const res = await clients.operations.getOperation(
        { scope: scopeMessage(c.get("scope")), id: idOf(ref) },
        { timeoutMs: CALL_TIMEOUT_MS },
      );
      return c.json(operationStateJson(required(res.operation), res.receipts, res.receiptEvidenceStatus));
    })
    .post("/cancel_operation", async (c) => {
      const { ref, reason } = parseCancel(c.get("body"));
      const res = await clients.operations.cancelOperation(
        { scope: scopeMessage(c.get("scope")), id: idOf(ref), reason },
        { timeoutMs: CALL_TIMEOUT_MS },
      );
      return c.json({ outcome: res.outcome, operation: operationJson(required(res.operation)) });
    });
}
