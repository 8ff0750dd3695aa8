import { describe, expect, it } from "vitest";
import { type CreateFields, createProblem, payoutDestinationProblem } from "./create.ts";

// The create rules, stated once for the edge and operations: each bad field answered with
// its field and message, in the order of the edge's schema.

const good: CreateFields = {
  merchant_operation_id: "order-1",
  client_id: "user-1",
  method: "WT_RUB_C2C",
  amount: "100.00",
  currency: "RUB",
  number: "4111111111111111",
};

describe("createProblem", () => {
  it("takes a good payment and payout", () => {
    expect(createProblem("payment", good)).toBeUndefined();
    expect(createProblem("payout", good)).toBeUndefined();
    expect(
      createProblem("payout", {
        ...good,
        method: "WT_RUB_PHONE",
        number: "+79001234567",
        bankname: "sberbank",
      }),
    ).toBeUndefined();
  });

  it.each<[string, Partial<CreateFields>, string, string]>([
    [
      "a missing key",
      { merchant_operation_id: undefined },
      "merchant_operation_id",
      "merchant_operation_id is required",
    ],
    [
      "an empty key",
      { merchant_operation_id: "" },
      "merchant_operation_id",
      "merchant_operation_id must not be empty",
    ],
    [
      "a long key",
      { merchant_operation_id: "k".repeat(256) },
      "merchant_operation_id",
      "merchant_operation_id must be at most 255 characters",
    ],
    [
      "a control character",
      { client_id: "a\u0001b" },
      "client_id",
      "client_id must not contain control characters (U+0000 to U+001F, U+007F)",
    ],
    ["a bad IP", { client_ip: "300.1.1.1" }, "client_ip", "client_ip must be an IPv4 or IPv6 address"],
    ["an unknown method", { method: "CASH" }, "method", "method must be one of WT_RUB_C2C, WT_RUB_PHONE"],
    [
      "a zero amount",
      { amount: "0.00" },
      "amount",
      'amount must be a decimal string with two decimal places, greater than 0 (for example "1000.00")',
    ],
    [
      "three places",
      { amount: "1.005" },
      "amount",
      'amount must be a decimal string with two decimal places, greater than 0 (for example "1000.00")',
    ],
    ["an unknown currency", { currency: "EUR" }, "currency", "currency must be one of RUB, USDT"],
    [
      "a method of another currency",
      { currency: "USDT" },
      "method",
      "method WT_RUB_C2C does not belong to currency USDT",
    ],
    ["a NUL in a name", { name: "Iv\u0000an" }, "name", "name must not contain the NUL character"],
  ])("refuses %s", (_, change, field, message) => {
    expect(createProblem("payment", { ...good, ...change })).toEqual({ field, message });
  });

  it("reports the first broken rule in the schema's order", () => {
    expect(createProblem("payment", { ...good, client_id: "", amount: "x" })?.field).toBe("client_id");
    expect(createProblem("payment", { ...good, amount: "x", currency: "USDT" })?.field).toBe("amount");
  });
});

describe("payoutDestinationProblem", () => {
  it.each<[string, Partial<CreateFields>, string, string]>([
    ["no number", { number: undefined }, "number", "number is required for payouts"],
    ["a blank number", { number: "  " }, "number", "number is required for payouts"],
    ["a short card", { number: "4111" }, "number", "number must be a card number"],
    [
      "a card on the phone rail",
      { method: "WT_RUB_PHONE", number: "4111 1111" },
      "number",
      "number must be a phone number",
    ],
    [
      "no bank for a phone",
      { method: "WT_RUB_PHONE", number: "+79001234567" },
      "bankname",
      "bankname is required for WT_RUB_PHONE payouts",
    ],
  ])("refuses %s", (_, change, field, message) => {
    expect(payoutDestinationProblem({ ...good, ...change })).toEqual({ field, message });
    expect(createProblem("payout", { ...good, ...change })).toEqual({ field, message });
    expect(createProblem("payment", { ...good, ...change })).toBeUndefined();
  });
});
