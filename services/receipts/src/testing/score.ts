// Scores the review over the generated corpus: every case read and checked in process,
// with reuse answered from an in-memory history instead of the database, and the
// verdicts tallied by expected class.
import { createHash } from "node:crypto";
import { readTrustedPdf } from "../pdf/parse.ts";
import { decide, type Finding, finding } from "../review/findings.ts";
import { recordedKeys, reuseKeys } from "../review/reuse.ts";
import { reviewContent } from "../review/review.ts";
import type { CorpusCase, ExpectedClass, Split } from "./corpus.ts";

/** A verdict as the bars count it: `manual_check` split by its reason. */
export type VerdictClass = "completed" | "rejected" | "not_terminal" | "potential_fake";

/** One case's verdict and the checks that fired. */
export interface ScoredCase {
  id: string;
  split: Split;
  expected: ExpectedClass;
  technique: string;
  verdict: VerdictClass;
  checks: string[];
  findings: Finding[];
}

/** Reviews one case as the service would: earlier files first, each for an operation of its own. */
export async function scoreCase(c: Omit<CorpusCase, "bank">): Promise<ScoredCase> {
  const history = new Map<string, string>();
  const review = async (file: Uint8Array, operation: string) => {
    const content = reviewContent(await readTrustedPdf(file), c.input);
    const findings = [...content.findings];
    const sha = createHash("sha256").update(file).digest("hex");
    if (content.info !== undefined) {
      const earlier = history.get(`file:${sha}`);
      if (earlier)
        findings.push(finding("receipt_reused", `the same file was submitted for operation ${earlier}`));
    }
    for (const key of reuseKeys(content.extraction)) {
      const other = history.get(`${key.kind}:${key.key}`);
      if (other && other !== operation) {
        findings.push(finding("transaction_reused", `${key.detail} was used for operation ${other}`));
        break;
      }
    }
    history.set(`file:${sha}`, operation);
    for (const key of recordedKeys(content.extraction))
      if (!history.has(`${key.kind}:${key.key}`)) history.set(`${key.kind}:${key.key}`, operation);
    return findings;
  };
  for (const [i, file] of c.earlier.entries()) await review(file, `earlier-${i}`);
  const findings = await review(c.file, "this");
  const v = decide(findings);
  return {
    id: c.id,
    split: c.split,
    expected: c.expected,
    technique: c.technique,
    verdict: v.verdict === "manual_check" ? v.reason : v.verdict,
    checks: [...new Set(findings.map((f) => f.check))].sort(),
    findings,
  };
}

const CLASSES: ExpectedClass[] = ["genuine", "forgery", "in_progress", "declined", "unreadable"];
const VERDICTS: VerdictClass[] = ["completed", "rejected", "not_terminal", "potential_fake"];

/** Whether a case's verdict is what its class must get. */
export function meetsBar(s: Pick<ScoredCase, "expected" | "verdict">): boolean {
  switch (s.expected) {
    case "genuine":
      return s.verdict === "completed";
    case "forgery":
      return s.verdict === "potential_fake" || s.verdict === "rejected";
    case "declined":
      return s.verdict === "rejected" || s.verdict === "potential_fake";
    default:
      return s.verdict === "not_terminal";
  }
}

/** The rates the bars are about. */
export function rates(scored: readonly ScoredCase[]) {
  const of = (cls: ExpectedClass) => scored.filter((s) => s.expected === cls);
  const forgeries = of("forgery");
  const genuine = of("genuine");
  const pending = [...of("in_progress"), ...of("unreadable")];
  return {
    caught: forgeries.filter(meetsBar).length / Math.max(1, forgeries.length),
    held: genuine.filter((s) => !meetsBar(s)).length / Math.max(1, genuine.length),
    pendingOk: pending.filter(meetsBar).length / Math.max(1, pending.length),
    pendingFake: pending.filter((s) => s.verdict === "potential_fake").length,
    counts: { forgeries: forgeries.length, genuine: genuine.length, pending: pending.length },
  };
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

/** The confusion table (expected class × verdict) and the rates, as markdown. */
export function report(title: string, scored: readonly ScoredCase[]): string {
  const lines = [
    `**${title}** (${scored.length} cases)`,
    "",
    `| expected \\ verdict | ${VERDICTS.join(" | ")} |`,
    `|---|${VERDICTS.map(() => "---:").join("|")}|`,
  ];
  for (const cls of CLASSES) {
    const row = scored.filter((s) => s.expected === cls);
    lines.push(`| ${cls} | ${VERDICTS.map((v) => row.filter((s) => s.verdict === v).length).join(" | ")} |`);
  }
  const r = rates(scored);
  lines.push(
    "",
    `forgeries caught (potential_fake or rejected): ${pct(r.caught)} of ${r.counts.forgeries}; ` +
      `genuine held: ${pct(r.held)} of ${r.counts.genuine}; ` +
      `in progress or unreadable ending not_terminal: ${pct(r.pendingOk)} of ${r.counts.pending} (potential_fake: ${r.pendingFake})`,
    "",
    "| forgery technique | cases | caught |",
    "|---|---:|---:|",
  );
  const techniques = [
    ...new Set(scored.filter((s) => s.expected === "forgery").map((s) => s.technique)),
  ].sort();
  for (const t of techniques) {
    const row = scored.filter((s) => s.technique === t);
    lines.push(`| ${t} | ${row.length} | ${pct(row.filter(meetsBar).length / row.length)} |`);
  }
  return lines.join("\n");
}
