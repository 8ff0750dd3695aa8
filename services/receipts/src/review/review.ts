import type { Decimal } from "@gw/money";
import { type Extraction, extract } from "../layouts/index.ts";
import { ReceiptText } from "../layouts/text.ts";
import type { ParseOutcome, PdfInfo } from "../pdf/parse.ts";
import { type Finding, finding } from "./findings.ts";
import { type ExpectedPayment, recipientMismatch } from "./requisites.ts";

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

/**
 * Producers and creators of editing tools. Banks generate receipts with report engines
 * and PDF libraries; a receipt last written by an editor was opened and saved by a person.
 */
const EDITORS =
  /photoshop|illustrator|acrobat(?! distiller)|foxit|pdf-?xchange|ilovepdf|smallpdf|sejda|pdfescape|pdf24|pdffiller|nitro|pdfelement|wondershare|master ?pdf|libreoffice|openoffice|microsoft.{0,10}word|canva|inkscape|gimp|pixelmator|preview|quartz pdfcontext|pdf candy|docfly|sodapdf|abbyy/i;

/** A receipt's creation and modification dates may differ by seconds, not by minutes. */
const DATES_APART_MS = 5 * 60_000;
/** Banks print times to the minute and clocks drift: the window is widened by this much on both sides. */
const WINDOW_SLACK_MS = 10 * 60_000;
/** Below this many characters of text a PDF is a picture of a receipt: nothing can be read. */
const MIN_TEXT_CHARS = 20;

/** Runs every check a receipt's own content allows. Pure: the same file and input give the same findings. */
export function reviewContent(parsed: ParseOutcome, input: ReviewInput): ContentReview {
  if (parsed.kind === "failed") return { findings: [finding(parsed.check, parsed.detail)] };
  const findings: Finding[] = [];
  const { structure, info } = parsed;

  const saves = structure.eofMarkers - (structure.linearized ? 1 : 0);
  if (saves > 1)
    findings.push(finding("incremental_update", `${saves - 1} incremental update(s) after creation`));
  if (structure.activeContent.length > 0)
    findings.push(finding("active_content", `carries ${structure.activeContent.join(", ")}`));
  const tool = [info.producer, info.creator].find((v) => v && EDITORS.test(v));
  if (tool) findings.push(finding("editor_producer", `written by "${tool}"`));
  const created = parsePdfDate(info.creationDate);
  const modified = parsePdfDate(info.modDate);
  if (created && modified && Math.abs(modified.getTime() - created.getTime()) > DATES_APART_MS)
    findings.push(
      finding("dates_apart", `created ${created.toISOString()}, modified ${modified.toISOString()}`),
    );

  const text = ReceiptText.fromPages(parsed.pages);
  if (text.size < MIN_TEXT_CHARS) {
    findings.push(finding("no_text", "no extractable text (an image of a receipt?)"));
    return { findings, info, pageCount: parsed.pageCount };
  }
  const x = extract(text);

  const readings = new Set(x.amountReadings);
  if (readings.size > 1)
    findings.push(finding("text_inconsistent", `amounts disagree: ${[...readings].join(" / ")}`));
  const statuses = new Set(x.statusTexts);
  if (x.status === undefined && statuses.size > 1)
    findings.push(finding("text_inconsistent", `statuses disagree: ${[...statuses].join(" / ")}`));

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
