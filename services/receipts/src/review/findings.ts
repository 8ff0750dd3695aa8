/**
 * The checks of a receipt review and what each leads to. A finding is one check that
 * fired; the verdict follows from the strongest outcome among them (see `decide`).
 */
export const CHECKS = {
  // The file cannot be validated: never a fraud signal.
  not_pdf: "not_terminal",
  file_too_large: "not_terminal",
  pdf_unreadable: "not_terminal",
  parse_timeout: "not_terminal",
  parse_memory: "not_terminal",
  parse_capacity: "not_terminal",
  too_many_pages: "not_terminal",
  too_many_objects: "not_terminal",
  no_text: "not_terminal",
  fields_missing: "not_terminal",
  // The receipt shows a transfer still in progress.
  transfer_in_progress: "not_terminal",
  // The receipt shows a transfer that failed or was cancelled.
  transfer_failed: "rejected",
  // The receipt may be forged or is suspicious.
  incremental_update: "potential_fake",
  foreign_producer: "potential_fake",
  writer_mismatch: "potential_fake",
  mixed_banks: "potential_fake",
  dates_apart: "potential_fake",
  active_content: "potential_fake",
  text_inconsistent: "potential_fake",
  receipt_reused: "potential_fake",
  transaction_reused: "potential_fake",
  recipient_mismatch: "potential_fake",
  amount_mismatch: "potential_fake",
  date_outside_window: "potential_fake",
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

/**
 * The verdict from the findings. A fraud signal outweighs everything (an edited receipt
 * of a failed transfer is still an edited receipt), a failed transfer outweighs one that
 * cannot be validated, and only a review with no finding completes.
 */
export function decide(findings: readonly Finding[]): Verdict {
  if (findings.some((f) => f.outcome === "potential_fake"))
    return { verdict: "manual_check", reason: "potential_fake" };
  if (findings.some((f) => f.outcome === "rejected")) return { verdict: "rejected" };
  if (findings.some((f) => f.outcome === "not_terminal"))
    return { verdict: "manual_check", reason: "not_terminal" };
  return { verdict: "completed" };
}
