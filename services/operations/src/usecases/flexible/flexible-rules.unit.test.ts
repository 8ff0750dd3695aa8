import { create } from "@bufbuild/protobuf";
import { flexibleLinkProblem } from "@gw/api";
import { CreateFlexibleLinkRequestSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../domain/lifecycle/errors.ts";
import { parseFlexible } from "./create-link.ts";

// Operations refuses a bad flexible link with the field and message of libs/api's
// flexibleLinkProblem, which the edge answers with too (its own test), so the two agree.

const scope = {
  shopId: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
  merchantId: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8f",
};
const good: Record<string, string | undefined> = {
  merchantOperationId: "link-1",
  clientId: "user-1",
  method: "WT_RUB_C2C",
  currency: "RUB",
  recommendedAmount: "1000.00",
  minAmount: "500.00",
  maxAmount: "1500.00",
};

const BAD: [string, Record<string, string | undefined>][] = [
  ["an empty key", { merchantOperationId: "" }],
  ["an empty client_id", { clientId: "" }],
  ["a bad IP", { clientIp: "300.1.1.1" }],
  ["an unknown method", { method: "CASH" }],
  ["an unknown currency", { currency: "EUR" }],
  ["a zero recommended amount", { recommendedAmount: "0.00" }],
  ["a min of three decimals", { minAmount: "1.005" }],
  ["a method of another currency", { currency: "USDT" }],
  ["min above max", { minAmount: "2000.00" }],
  ["a recommended amount above max", { recommendedAmount: "1500.01" }],
  ["two faults: the first in the schema's order", { clientId: "", maxAmount: "x" }],
];

function operationsProblem(fields: Record<string, string | undefined>) {
  try {
    parseFlexible(create(CreateFlexibleLinkRequestSchema, { scope, ...fields }));
    return undefined;
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    return { field: err.field, message: err.message };
  }
}

describe("operations' flexible link rules", () => {
  it.each(BAD)("answer %s as libs/api's flexibleLinkProblem does", (_, change) => {
    const f = { ...good, ...change };
    const expected = flexibleLinkProblem({
      merchant_operation_id: f.merchantOperationId,
      client_id: f.clientId,
      client_ip: f.clientIp,
      method: f.method ?? "",
      currency: f.currency ?? "",
      recommended_amount: f.recommendedAmount ?? "",
      min_amount: f.minAmount,
      max_amount: f.maxAmount,
    });
    expect(expected).toBeDefined();
    expect(operationsProblem(f)).toEqual(expected);
  });

  it("passes a good link, its amounts at scale 2", () => {
    const input = parseFlexible(create(CreateFlexibleLinkRequestSchema, { scope, ...good }));
    expect([input.recommended, input.min, input.max]).toEqual(["1000.00", "500.00", "1500.00"]);
  });
});
