import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "@gw/proto/gateway/common/v1/common_pb";
import { failure } from "@gw/rpc";
import { describe, expect, it } from "vitest";
import { ApiError, fromConnectError } from "./errors.ts";

// The edge's codes are libs/api's PublicErrorCode: a misspelt one does not typecheck, and a
// code read off the wire that the list does not know is answered as the status's own.

describe("the edge's public error codes", () => {
  it("take only a code of the list (checked by the typecheck)", () => {
    expect(new ApiError(412, "fx_rate_missing", "no rate").code).toBe("fx_rate_missing");
    // @ts-expect-error: a typo is no public error code.
    expect(new ApiError(412, "fx_rate_mising", "no rate").code).toBe("fx_rate_mising");
  });

  it("pass a downstream's known code through, and read an unknown one as the status's own", () => {
    const known = fromConnectError(
      failure(Code.FailedPrecondition, "pricing_not_configured", "no tier", "amount"),
    );
    expect(known).toMatchObject({ status: 412, code: "pricing_not_configured", field: "amount" });
    const unknown = new ConnectError("odd", Code.FailedPrecondition, undefined, [
      { desc: ErrorInfoSchema, value: { code: "a_code_of_a_newer_peer", field: "" } },
    ]);
    expect(fromConnectError(unknown)).toMatchObject({
      status: 412,
      code: "precondition_failed",
      message: "odd",
    });
  });
});
