/**
 * The checks of a receipt review and what each leads to. A finding is one check that
 * fired; the verdict follows from them by precedence (see `decide`).
 */
export const CHECKS = {
  // The file cannot be read as a receipt: never a fraud signal.
  not_pdf: "not_terminal",
  file_too_large: "not_terminal",
  pdf_unreadable: "not_terminal",
  parse_timeout: "not_terminal",
  parse_memory: "not_terminal",
  parse_capacity: "not_terminal",
  too_many_pages: "not_terminal",
  too_many_objects: "not_terminal",
  no_text: "not_terminal",
  // What confirms the payment (status, amount, recipient, date) is not on it, or its text
  // cannot be read: the file's own evidence of an edit still decides before these.
  fields_missing: "not_terminal",
  text_unreadable: "not_terminal",
  // The receipt shows a transfer still in progress.
  transfer_in_progress: "not_terminal",
  // The receipt shows a transfer that failed or was cancelled.
  transfer_failed: "rejected",
  // Evidence that someone changed or made up the receipt.
  incremental_update: "potential_fake",
  text_overlaid: "potential_fake",
  editor_wrote: "potential_fake",
  mixed_banks: "potential_fake",
  text_inconsistent: "potential_fake",
  receipt_reused: "potential_fake",
  transaction_reused: "potential_fake",
  recipient_mismatch: "potential_fake",
  amount_mismatch: "potential_fake",
  date_outside_window: "potential_fake",
  // Notes for the operator: unusual, never evidence, never a hold by themselves.
  saved_again: "note",
  dates_apart: "note",
  active_content: "note",
} as const;
export type Check = keyof typeof CHECKS;
export type Outcome = (typeof CHECKS)[Check];

/** One check that fired, with a detail for operators. */
export interface Finding {
  check: Check;
  outcome: Outcome;
  detail: string;
}

export const finding = (check: Check, detail: string): Finding => ({ check, outcome: CHECKS[check], detail });

export type Verdict =
  | { verdict: "completed" }
  | { verdict: "rejected" }
  | { verdict: "manual_check"; reason: "potential_fake" | "not_terminal" };

/** Files that cannot be read as a receipt at all. */
const UNREADABLE: ReadonlySet<Check> = new Set([
  "not_pdf",
  "file_too_large",
  "pdf_unreadable",
  "parse_timeout",
  "parse_memory",
  "parse_capacity",
  "too_many_pages",
  "too_many_objects",
  "no_text",
]);

/**
 * The verdict from the findings, by precedence (the table in the README): a transfer in
 * progress is not_terminal whatever else fires (never a fraud signal); a declined or
 * failed transfer is rejected; a file that cannot be read is not_terminal; only then does
 * evidence of a forgery hold the payment as potential_fake; a receipt missing what would
 * confirm the payment is not_terminal; else it completes. Notes never decide anything.
 */
export function decide(findings: readonly Finding[]): Verdict {
  const has = (check: Check) => findings.some((f) => f.check === check);
  if (has("transfer_in_progress")) return { verdict: "manual_check", reason: "not_terminal" };
  if (has("transfer_failed")) return { verdict: "rejected" };
  if (findings.some((f) => UNREADABLE.has(f.check)))
    return { verdict: "manual_check", reason: "not_terminal" };
  if (findings.some((f) => f.outcome === "potential_fake"))
    return { verdict: "manual_check", reason: "potential_fake" };
  if (findings.some((f) => f.outcome === "not_terminal"))
    return { verdict: "manual_check", reason: "not_terminal" };
  return { verdict: "completed" };
}
