import { create } from "@bufbuild/protobuf";
import { OperationSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { describe, expect, it } from "vitest";
import { operationJson } from "./index.ts";

const operation = (status: string, manualCheckReason?: string) =>
  create(OperationSchema, {
    operationId: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
    merchantOperationId: "order-1",
    type: "payment",
    status,
    method: "WT_RUB_C2C",
    expectedAmount: "1000.00",
    actualAmount: "0.00",
    currency: "RUB",
    manualCheckReason,
  });

describe("manual_check_reason", () => {
  it("is potential_fake when the internal reason is missing", () => {
    expect(operationJson(operation("manual_check")).manual_check_reason).toBe("potential_fake");
    expect(operationJson(operation("manual_check", "")).manual_check_reason).toBe("potential_fake");
  });

  it("passes the reason given", () => {
    expect(operationJson(operation("manual_check", "not_terminal")).manual_check_reason).toBe("not_terminal");
    expect(operationJson(operation("manual_check", "potential_fake")).manual_check_reason).toBe(
      "potential_fake",
    );
  });

  it("is absent outside manual_check, even when a reason is left over", () => {
    for (const status of ["pending", "awaiting_confirmation", "completed", "rejected", "cancelled"])
      expect(operationJson(operation(status, "not_terminal"))).not.toHaveProperty("manual_check_reason");
  });
});
