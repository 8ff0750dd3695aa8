import { describe, expect, expectTypeOf, it } from "vitest";
import {
  EDGE_ERROR_CODES,
  errorCodesFor,
  isPublicErrorCode,
  PUBLIC_ERRORS,
  type PublicErrorCode,
  type PublicErrorSpec,
  SERVICE_ERROR_CODES,
  statusesOf,
} from "./errors.ts";

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

  it("are the table's codes, split by who raises them", () => {
    expect([...SERVICE_ERROR_CODES, ...EDGE_ERROR_CODES].sort()).toEqual(Object.keys(PUBLIC_ERRORS).sort());
    for (const code of SERVICE_ERROR_CODES) expect(PUBLIC_ERRORS[code].from).toBe("service");
    for (const code of EDGE_ERROR_CODES) expect(PUBLIC_ERRORS[code].from).toBe("edge");
  });

  it("each have one status per row, an audience and a meaning", () => {
    for (const [code, spec] of Object.entries(PUBLIC_ERRORS) as [PublicErrorCode, PublicErrorSpec][]) {
      const statuses = statusesOf(code);
      expect(new Set(statuses).size, code).toBe(statuses.length);
      if (spec.rewrittenFrom !== undefined) expect(statuses, code).not.toContain(spec.rewrittenFrom);
      expect(spec.audience === "any" || spec.audience.length > 0, code).toBe(true);
      expect(spec.meaning, code).not.toBe("");
    }
  });

  it("reach the merchant API when they reach any route, never the services-only audience", () => {
    expect(errorCodesFor("merchant")).toContain("not_found");
    expect(errorCodesFor("admin")).toContain("internal");
    expect(errorCodesFor("merchant")).toContain("rate_limited");
    expect(errorCodesFor("admin")).not.toContain("rate_limited");
    expect(errorCodesFor("internal")).not.toContain("internal");
  });
});
