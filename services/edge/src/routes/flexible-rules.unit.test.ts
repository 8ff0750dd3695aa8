import { type FlexibleLinkFields, flexibleLinkProblem } from "@gw/api";
import { describe, expect, it } from "vitest";
import { ApiError } from "../errors.ts";
import { parseBody } from "../validation.ts";
import { flexibleLinkBody } from "./flexible.ts";

// The edge refuses a bad flexible link with the field and message of libs/api's
// flexibleLinkProblem, which operations answers with too (its own test), so the two agree.

const good = {
  merchant_operation_id: "link-1",
  client_id: "user-1",
  method: "WT_RUB_C2C",
  currency: "RUB",
  recommended_amount: "1000.00",
  min_amount: "500.00",
  max_amount: "1500.00",
};

function edgeProblem(body: Record<string, unknown>) {
  try {
    parseBody(flexibleLinkBody, body);
    return undefined;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { field: err.field, message: err.message };
  }
}

const BAD: [string, Record<string, unknown>][] = [
  ["no key", { merchant_operation_id: undefined }],
  ["an empty client_id", { client_id: "" }],
  ["a bad IP", { client_ip: "300.1.1.1" }],
  ["an unknown method", { method: "CASH" }],
  ["an unknown currency", { currency: "EUR" }],
  ["a zero recommended amount", { recommended_amount: "0.00" }],
  ["a min of three decimals", { min_amount: "1.005" }],
  ["a method of another currency", { currency: "USDT" }],
  ["min above max", { min_amount: "2000.00" }],
  ["a recommended amount above max", { recommended_amount: "1500.01" }],
  ["two faults: the first in the schema's order", { client_id: "", max_amount: "x" }],
];

describe("the edge's flexible link rules", () => {
  it.each(BAD)("answer %s as libs/api's flexibleLinkProblem does", (_, change) => {
    const body = { ...good, ...change };
    const expected = flexibleLinkProblem(body as unknown as FlexibleLinkFields);
    expect(expected).toBeDefined();
    expect(edgeProblem(body)).toEqual(expected);
  });

  it("passes a good link", () => {
    expect(edgeProblem(good)).toBeUndefined();
  });
});
