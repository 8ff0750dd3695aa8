// Every row of the precedence table in the README (services/receipts/README.md, "The
// verdict: precedence"), with the findings that must not change it.
import { describe, expect, it } from "vitest";
import { type Check, decide, finding } from "./findings.ts";

const verdictOf = (...checks: Check[]) => {
  const v = decide(checks.map((c) => finding(c, "test")));
  return v.verdict === "manual_check" ? v.reason : v.verdict;
};

const EVIDENCE: Check[] = [
  "incremental_update",
  "text_overlaid",
  "editor_wrote",
  "mixed_banks",
  "text_inconsistent",
  "receipt_reused",
  "transaction_reused",
  "recipient_mismatch",
  "amount_mismatch",
  "date_outside_window",
];
const UNREADABLE: Check[] = [
  "not_pdf",
  "file_too_large",
  "pdf_unreadable",
  "too_many_pages",
  "too_many_objects",
  "parse_timeout",
  "parse_memory",
  "parse_capacity",
  "no_text",
];
const NOTES: Check[] = ["saved_again", "dates_apart", "active_content"];

describe("the verdict's precedence", () => {
  it("1: a transfer in progress is not_terminal whatever else fires", () => {
    expect(verdictOf("transfer_in_progress")).toBe("not_terminal");
    for (const other of [...EVIDENCE, ...UNREADABLE, "transfer_failed", "fields_missing"] as Check[])
      expect(verdictOf("transfer_in_progress", other), other).toBe("not_terminal");
    expect(verdictOf("transfer_in_progress", ...EVIDENCE)).toBe("not_terminal");
  });

  it("2: a declined or failed transfer is rejected whatever else fires", () => {
    expect(verdictOf("transfer_failed")).toBe("rejected");
    for (const other of [...EVIDENCE, ...UNREADABLE, "fields_missing"] as Check[])
      expect(verdictOf("transfer_failed", other), other).toBe("rejected");
  });

  it("3: a file that is not a readable PDF is not_terminal, never potential_fake", () => {
    for (const check of UNREADABLE) {
      expect(verdictOf(check), check).toBe("not_terminal");
      expect(verdictOf(check, ...EVIDENCE), check).toBe("not_terminal");
    }
  });

  it("4: only then does evidence of a forgery hold the payment as potential_fake", () => {
    for (const check of EVIDENCE) {
      expect(verdictOf(check), check).toBe("potential_fake");
      expect(verdictOf(check, "fields_missing", "text_unreadable", ...NOTES), check).toBe("potential_fake");
    }
  });

  it("5: a receipt missing what confirms the payment, or whose text cannot be read, is not_terminal", () => {
    for (const check of ["fields_missing", "text_unreadable"] as Check[]) {
      expect(verdictOf(check), check).toBe("not_terminal");
      expect(verdictOf(check, ...NOTES), check).toBe("not_terminal");
    }
  });

  it("6: anything else completes; notes never hold a payment", () => {
    expect(verdictOf()).toBe("completed");
    for (const note of NOTES) expect(verdictOf(note), note).toBe("completed");
    expect(verdictOf(...NOTES)).toBe("completed");
  });
});
