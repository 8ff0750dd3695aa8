import type { Decimal } from "@gw/money";
import { type Extraction, extract } from "../layouts/index.ts";
import { ReceiptText } from "../layouts/text.ts";
import type { ParseOutcome, PdfInfo } from "../pdf/parse.ts";
import { contradictions } from "./consistency.ts";
import { fileEvidence } from "./file-evidence.ts";
import { type Finding, finding } from "./findings.ts";
import { issuerOf } from "./one-bank.ts";
import { type ExpectedPayment, recipientMismatch } from "./requisites.ts";
import { transferKey } from "./reuse.ts";

/** The payment a receipt is checked against. */
export interface ReviewInput extends ExpectedPayment {
  amount: Decimal;
  createdAt: Date;
  expiresAt?: Date | undefined;
  /** When the receipt was submitted: the end of the window when the provider gave no expiry. */
  submittedAt: Date;
}

/** A receipt's own checks (everything but reuse, which needs the other operations). */
export interface ContentReview {
  findings: Finding[];
  extraction?: Extraction | undefined;
  info?: PdfInfo | undefined;
  pageCount?: number | undefined;
}

/** Banks print times to the minute and clocks drift: the window is widened by this much on both sides. */
const WINDOW_SLACK_MS = 10 * 60_000;
/** Below this many characters of text a PDF is a picture of a receipt: nothing can be read. */
const MIN_TEXT_CHARS = 20;
/** Above this share of non-characters the text of a file cannot be read (see `ReceiptText.garbled`). */
const GARBLED_SHARE = 0.02;

/** Runs every check a receipt's own content allows. Pure: the same file and input give the same findings. */
export function reviewContent(parsed: ParseOutcome, input: ReviewInput): ContentReview {
  if (parsed.kind === "failed") return { findings: [finding(parsed.check, parsed.detail)] };
  const { structure, info } = parsed;
  // Edits after the bank wrote the file, from its structure, its text runs and its metadata.
  const findings: Finding[] = fileEvidence(structure, info, parsed.pages, {
    created: parsePdfDate(info.creationDate),
    modified: parsePdfDate(info.modDate),
  });

  const text = ReceiptText.fromPages(parsed.pages);
  if (text.size < MIN_TEXT_CHARS) {
    // A picture of a receipt: nothing on it can be checked, so nothing on it is a fraud signal.
    return {
      findings: [...findings, finding("no_text", "no extractable text (an image of a receipt?)")],
      info,
      pageCount: parsed.pageCount,
    };
  }
  if (text.garbled > GARBLED_SHARE)
    // The page looks like a receipt but its text maps to nothing readable: nothing on it
    // can be compared with the payment (the file's own evidence above still counts).
    return {
      findings: [
        ...findings,
        finding("text_unreadable", `${Math.round(text.garbled * 100)} % of the text is not characters`),
      ],
      info,
      pageCount: parsed.pageCount,
    };
  const x = extract(text);

  // One receipt, one bank.
  const { issuer, conflict } = issuerOf(text, x.layout);
  if (conflict) findings.push(finding("mixed_banks", `parts of several banks' receipts: ${conflict}`));
  if (issuer && x.transactionId?.startsWith(`${x.layout}:`) && x.layout !== issuer.id)
    x.transactionId = `${issuer.id}:${x.transactionId.slice(x.layout.length + 1)}`;
  x.transferKey = transferKey(x, issuer?.id);

  findings.push(...contradictions(x));
  const statuses = new Set(x.statusTexts);

  if (x.status === "in_progress")
    findings.push(finding("transfer_in_progress", `status "${x.statusTexts[0]}"`));
  else if (x.status === "failed") findings.push(finding("transfer_failed", `status "${x.statusTexts[0]}"`));

  const missing: string[] = [];
  if (x.status === undefined && statuses.size <= 1) missing.push("status");
  if (!x.amount) missing.push("amount");
  else if (!x.amount.equals(input.amount))
    findings.push(
      finding("amount_mismatch", `shows ${x.amount.toFixed(2)}, expected ${input.amount.toFixed(2)}`),
    );
  const recipient = recipientMismatch(x, input);
  if (recipient === "missing") missing.push("recipient");
  else if (recipient) findings.push(finding("recipient_mismatch", recipient));
  if (!x.dateTime) missing.push("date");
  else {
    const from = input.createdAt.getTime() - WINDOW_SLACK_MS;
    const to = (input.expiresAt ?? input.submittedAt).getTime() + WINDOW_SLACK_MS;
    const at = x.dateTime.getTime();
    if (at < from || at > to)
      findings.push(
        finding(
          "date_outside_window",
          `dated ${x.dateTime.toISOString()}, window ${input.createdAt.toISOString()} .. ${(input.expiresAt ?? input.submittedAt).toISOString()}`,
        ),
      );
  }
  if (missing.length > 0)
    findings.push(finding("fields_missing", `${x.layout}: not found: ${missing.join(", ")}`));
  return { findings, extraction: x, info, pageCount: parsed.pageCount };
}

/** Reads a PDF date ("D:20250312143210+03'00'"); undefined when absent or malformed. */
export function parsePdfDate(value: string | undefined): Date | undefined {
  if (!value) return undefined;
  const m = /^(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(Z|[+-]\d{2}'?\d{2}'?)?/.exec(value);
  if (!m) return undefined;
  const [y, mo = "01", d = "01", h = "00", mi = "00", s = "00"] = m.slice(1, 7) as string[];
  let offsetMin = 0;
  const tz = m[7];
  if (tz && tz !== "Z") {
    const digits = tz.replace(/'/g, "");
    offsetMin =
      (digits[0] === "-" ? -1 : 1) * (Number(digits.slice(1, 3)) * 60 + Number(digits.slice(3, 5) || 0));
  }
  const ms =
    Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)) - offsetMin * 60_000;
  return Number.isNaN(ms) ? undefined : new Date(ms);
}
