import { describe, expect, it } from "vitest";
import { type FlexibleLinkFields, flexibleLinkProblem, rangeProblem } from "./create.ts";

// A flexible link's rules as the merchant reads them in the 400: the edge and operations
// both answer with these (services/edge/src/routes/flexible-rules.unit.test.ts,
// services/operations/src/usecases/flexible/flexible-rules.unit.test.ts).

const good: FlexibleLinkFields = {
  merchant_operation_id: "link-1",
  client_id: "user-1",
  method: "WT_RUB_C2C",
  currency: "RUB",
  recommended_amount: "1000.00",
  min_amount: "500.00",
  max_amount: "1500.00",
};

describe("flexibleLinkProblem", () => {
  it("passes a link within its bounds, and one without bounds", () => {
    expect(flexibleLinkProblem(good)).toBeUndefined();
    expect(flexibleLinkProblem({ ...good, min_amount: undefined, max_amount: null })).toBeUndefined();
    expect(flexibleLinkProblem({ ...good, recommended_amount: "500.00" })).toBeUndefined();
  });

  it.each<[string, Partial<FlexibleLinkFields>, { field: string; message: RegExp }]>([
    ["no key", { merchant_operation_id: undefined }, { field: "merchant_operation_id", message: /required/ }],
    ["a bad IP", { client_ip: "300.1.1.1" }, { field: "client_ip", message: /IPv4 or IPv6/ }],
    ["an unknown method", { method: "CASH" }, { field: "method", message: /must be one of/ }],
    ["a method of another currency", { currency: "USDT" }, { field: "method", message: /does not belong/ }],
    [
      "a zero recommended amount",
      { recommended_amount: "0.00" },
      { field: "recommended_amount", message: /greater than 0/ },
    ],
    [
      "a min of three decimals",
      { min_amount: "1.005" },
      { field: "min_amount", message: /two decimal places/ },
    ],
    [
      "min above max",
      { min_amount: "2000.00" },
      { field: "min_amount", message: /must not exceed max_amount/ },
    ],
    [
      "a recommended amount above max",
      { recommended_amount: "1500.01" },
      { field: "recommended_amount", message: /within/ },
    ],
    [
      "a recommended amount below min",
      { recommended_amount: "499.99" },
      { field: "recommended_amount", message: /within/ },
    ],
    [
      "two faults: the first in the schema's order",
      { client_id: "", max_amount: "x" },
      { field: "client_id", message: /empty/ },
    ],
  ])("refuses %s", (_, change, expected) => {
    const problem = flexibleLinkProblem({ ...good, ...change });
    expect(problem?.field).toBe(expected.field);
    expect(problem?.message).toMatch(expected.message);
  });
});

describe("rangeProblem", () => {
  const range = { method: "WT_RUB_C2C", currency: "RUB", min_amount: "1.00", max_amount: "2.00" };
  it("passes a range whose bounds are in order, equal ones too", () => {
    expect(rangeProblem(range)).toBeUndefined();
    expect(rangeProblem({ ...range, min_amount: "2.00" })).toBeUndefined();
  });

  it.each<[string, Partial<typeof range>, string]>([
    ["an unknown method", { method: "WT_XXX" }, "method"],
    ["a method of another currency", { currency: "USDT" }, "method"],
    ["a zero min", { min_amount: "0.00" }, "min_amount"],
    ["a max of one decimal", { max_amount: "2.5" }, "max_amount"],
    ["min above max", { min_amount: "3.00" }, "min_amount"],
  ])("refuses %s, naming %s", (_, change, field) => {
    expect(rangeProblem({ ...range, ...change })?.field).toBe(field);
  });
});
