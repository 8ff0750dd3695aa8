import { describe, expect, it } from "vitest";
import { FIELD_RULES, fieldProblem, type TextField } from "./fields.ts";

// The one statement of the merchant API's text rules: each at its limit and one past it,
// and the characters no stored value may hold.

const fields = Object.keys(FIELD_RULES) as TextField[];

describe("fieldProblem", () => {
  it.each(fields)("takes %s at its length limit and refuses it one past", (field) => {
    const rule = FIELD_RULES[field];
    // A two-byte character, so that a byte limit and a character limit differ.
    const atLimit =
      rule.maxChars !== undefined ? "é".repeat(rule.maxChars) : "é".repeat((rule.maxBytes ?? 0) / 2);
    expect(fieldProblem(field, atLimit)).toBeUndefined();
    expect(fieldProblem(field, `${atLimit}a`)).toMatch(/at most/);
  });

  it("counts characters as code points: 255 emoji are 255 characters", () => {
    expect(fieldProblem("merchant_operation_id", "🙂".repeat(255))).toBeUndefined();
    expect(fieldProblem("merchant_operation_id", "🙂".repeat(256))).toMatch(/at most 255 characters/);
  });

  it.each(fields)("refuses a NUL and a lone surrogate in %s", (field) => {
    expect(fieldProblem(field, "a\u0000b")).toBeDefined();
    expect(fieldProblem(field, "a\ud800b")).toMatch(/well-formed/);
  });

  it("refuses control characters in identifiers and keeps newlines in free text", () => {
    for (const field of ["merchant_operation_id", "client_id", "number", "bankname"] as const) {
      for (const c of ["\u0001", "\t", "\n", "\u001f", "\u007f"])
        expect(fieldProblem(field, `a${c}b`)).toMatch(/control/);
    }
    expect(fieldProblem("reason", "line one\nline two\ttab")).toBeUndefined();
    expect(fieldProblem("name", "Иван\tИванов")).toBeUndefined();
  });
});
