import { create } from "@bufbuild/protobuf";
import {
  CancelOperationRequestSchema,
  CreateOperationRequestSchema,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import { describe, expect, it } from "vitest";
import { parseCreate } from "./create.ts";
import { cancelOperation } from "./lifecycle/cancel.ts";
import { ValidationError } from "./lifecycle/errors.ts";
import { findOperation } from "./operation-reads.ts";
import type { OperationStore } from "./repository/operations.ts";

// Issue 27 item 3 in operations: the same field rules as the edge (libs/api fields.ts),
// checked before anything reaches Postgres, for a caller that is not the edge.

const scope = {
  shopId: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
  merchantId: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8f",
};
const aCreate = (overrides: Record<string, string>) =>
  create(CreateOperationRequestSchema, {
    scope,
    type: "payout",
    merchantOperationId: "order-1",
    clientId: "user-1",
    method: "WT_RUB_C2C",
    amount: "100.00",
    currency: "RUB",
    number: "4111111111111111",
    ...overrides,
  });
/** A store no call may reach: the refusal comes first. */
const noStore = new Proxy(
  {},
  { get: () => () => Promise.reject(new Error("the store was called")) },
) as OperationStore;

const fieldOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof ValidationError ? err.field : `not a validation error: ${String(err)}`;
  }
  return "no error";
};

describe("operations' own check of the field rules", () => {
  it.each([
    ["merchantOperationId", "merchant_operation_id", "k".repeat(256)],
    ["merchantOperationId", "merchant_operation_id", "a\u0000b"],
    ["clientId", "client_id", "a\u0001b"],
    ["number", "number", "4111\u00001111"],
    ["name", "name", "Iv\u0000an"],
  ])("refuses a create whose %s breaks its rule, naming %s", (key, field, value) => {
    expect(fieldOf(() => parseCreate(aCreate({ [key]: value })))).toBe(field);
  });

  it("takes a 255-character key", () => {
    expect(parseCreate(aCreate({ merchantOperationId: "k".repeat(255) })).mop).toHaveLength(255);
  });

  it("refuses a cancel whose reason or key breaks its rule before it reads or inserts anything", async () => {
    const cancel = (mop: string, reason: string) =>
      cancelOperation(
        noStore,
        create(CancelOperationRequestSchema, {
          scope,
          id: { case: "merchantOperationId", value: mop },
          reason,
        }),
      );
    await expect(cancel("k", "a\u0000b")).rejects.toMatchObject({ field: "reason" });
    await expect(cancel("a\u0000b", "")).rejects.toMatchObject({ field: "merchant_operation_id" });
    await expect(
      findOperation(noStore, scope.shopId, { case: "merchantOperationId", value: "k".repeat(256) }),
    ).rejects.toMatchObject({ field: "merchant_operation_id" });
  });
});
