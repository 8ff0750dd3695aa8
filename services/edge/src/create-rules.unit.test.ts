import { type CreateFields, createProblem } from "@gw/api";
import { describe, expect, it } from "vitest";
import { ApiError } from "./errors.ts";
import { checkPayoutDestination, createOperationBody, parseBody } from "./validation.ts";

// The edge refuses a bad create with the field and message of libs/api's createProblem,
// which operations' parseCreate answers with too (its own test), so the two agree.

const good = {
  merchant_operation_id: "order-1",
  client_id: "user-1",
  method: "WT_RUB_C2C",
  amount: "100.00",
  currency: "RUB",
  number: "4111111111111111",
};

/** What the edge answers a create body with: the field and message of its 400, or undefined. */
function edgeProblem(type: "payment" | "payout", body: Record<string, unknown>) {
  try {
    const parsed = parseBody(createOperationBody, body);
    if (type === "payout") checkPayoutDestination(parsed);
    return undefined;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { field: err.field, message: err.message };
  }
}

const BAD: [string, Record<string, unknown>][] = [
  ["no key", { merchant_operation_id: undefined }],
  ["an empty key", { merchant_operation_id: "" }],
  ["a long key", { merchant_operation_id: "k".repeat(256) }],
  ["a control character in client_id", { client_id: "a\u0001b" }],
  ["a bad IP", { client_ip: "300.1.1.1" }],
  ["an unknown method", { method: "CASH" }],
  ["a zero amount", { amount: "0.00" }],
  ["an unknown currency", { currency: "EUR" }],
  ["a method of another currency", { currency: "USDT" }],
  ["a NUL in the name", { name: "Iv\u0000an" }],
  ["no number", { number: undefined }],
  ["a short card number", { number: "4111" }],
  ["a phone payout without a bank", { method: "WT_RUB_PHONE", number: "+79001234567" }],
  ["two faults: the first in the schema's order", { client_id: "", amount: "x" }],
];

describe("the edge's create rules", () => {
  it.each(BAD)("answer %s as libs/api's createProblem does", (_, change) => {
    const body = { ...good, ...change };
    for (const type of ["payment", "payout"] as const) {
      const expected = createProblem(type, body as unknown as CreateFields);
      expect(edgeProblem(type, body)).toEqual(expected);
    }
    expect(createProblem("payout", { ...good, ...change } as unknown as CreateFields)).toBeDefined();
  });
});
