import { describe, expect, expectTypeOf, it } from "vitest";
import { EDGE_ERROR_CODES, isPublicErrorCode, type PublicErrorCode, SERVICE_ERROR_CODES } from "./errors.ts";

describe("the public error codes", () => {
  it("are each listed once, in one of the two lists", () => {
    const all = [...SERVICE_ERROR_CODES, ...EDGE_ERROR_CODES];
    expect(new Set(all).size).toBe(all.length);
    for (const code of all) expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });

  it("tell a code of ours from any other string read off the wire", () => {
    expect(isPublicErrorCode("pricing_not_configured")).toBe(true);
    expect(isPublicErrorCode("invalid_json")).toBe(true);
    expect(isPublicErrorCode("pricing_not_configred")).toBe(false);
    expect(isPublicErrorCode("")).toBe(false);
  });

  it("are a union a misspelt code is not part of (checked by the typecheck)", () => {
    expectTypeOf<"fx_rate_missing">().toExtend<PublicErrorCode>();
    expectTypeOf<"fx_rate_mising">().not.toExtend<PublicErrorCode>();
    // @ts-expect-error: a typo is no public error code.
    const typo: PublicErrorCode = "validation_faild";
    expect(isPublicErrorCode(typo)).toBe(false);
  });
});
