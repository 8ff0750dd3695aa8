import { create } from "@bufbuild/protobuf";
import { createProblem } from "@gw/api";
import { CreateOperationRequestSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { describe, expect, it } from "vitest";
import { parseCreate } from "./create.ts";
import { ValidationError } from "./lifecycle/errors.ts";

// Operations refuses a bad create with the field and message of libs/api's createProblem,
// which the edge answers with too (services/edge/src/create-rules.unit.test.ts), so the two agree.

const scope = {
  shopId: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e",
  merchantId: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8f",
};
const good = {
  merchantOperationId: "order-1",
  clientId: "user-1",
  method: "WT_RUB_C2C",
  amount: "100.00",
  currency: "RUB",
  number: "4111111111111111",
};

const BAD: [string, Record<string, string | undefined>][] = [
  ["an empty key", { merchantOperationId: "" }],
  ["a long key", { merchantOperationId: "k".repeat(256) }],
  ["a control character in client_id", { clientId: "a\u0001b" }],
  ["a bad IP", { clientIp: "300.1.1.1" }],
  ["an unknown method", { method: "CASH" }],
  ["a zero amount", { amount: "0.00" }],
  ["an unknown currency", { currency: "EUR" }],
  ["a method of another currency", { currency: "USDT" }],
  ["a NUL in the name", { name: "Iv\u0000an" }],
  ["no number", { number: undefined }],
  ["a short card number", { number: "4111" }],
  ["a phone payout without a bank", { method: "WT_RUB_PHONE", number: "+79001234567" }],
  ["two faults: the first in the schema's order", { clientId: "", amount: "x" }],
];

function operationsProblem(type: "payment" | "payout", fields: Record<string, string | undefined>) {
  try {
    parseCreate(create(CreateOperationRequestSchema, { scope, type, ...fields }));
    return undefined;
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    return { field: err.field, message: err.message };
  }
}

describe("operations' create rules", () => {
  it.each(BAD)("answer %s as libs/api's createProblem does", (_, change) => {
    const fields: Record<string, string | undefined> = { ...good, ...change };
    for (const type of ["payment", "payout"] as const) {
      const expected = createProblem(type, {
        merchant_operation_id: fields.merchantOperationId,
        client_id: fields.clientId,
        client_ip: fields.clientIp,
        method: fields.method ?? "",
        amount: fields.amount ?? "",
        currency: fields.currency ?? "",
        number: fields.number,
        name: fields.name,
        bankname: fields.bankname,
      });
      expect(operationsProblem(type, fields)).toEqual(expected);
    }
    expect(operationsProblem("payout", fields)).toBeDefined();
  });

  it("keeps the bank dictionary its own", () => {
    expect(
      operationsProblem("payout", {
        ...good,
        method: "WT_RUB_PHONE",
        number: "+79001234567",
        bankname: "nobank",
      }),
    ).toEqual({ field: "bankname", message: "bankname is not a bank code of the method currency" });
  });
});
