// `pnpm --filter @gw/receipts corpus:score [--misses]`: the confusion table (expected class
// × verdict) of both splits of the corpus. `--misses` lists the tuning split's misses
// only (the held-out split is never looked into while tuning).
import { parseArgs } from "node:util";
import { meetsBar, report } from "../src/testing/score.ts";
import { scoreCorpus } from "./score.ts";

const { values } = parseArgs({ options: { misses: { type: "boolean", default: false } } });
const scored = await scoreCorpus();
for (const split of ["tuning", "heldout"] as const) {
  const part = scored.filter((s) => s.split === split);
  const whole = [...new Set(part.filter((s) => !s.entry.resaver).map((s) => s.entry.writer))].join(", ");
  const resavers = [...new Set(part.flatMap((s) => (s.entry.resaver ? [s.entry.resaver] : [])))].join(", ");
  process.stdout.write(`${report(`${split} split (writers: ${whole}; re-savers: ${resavers})`, part)}\n\n`);
  if (values.misses && split === "tuning")
    for (const s of part.filter((x) => !meetsBar(x)))
      process.stdout.write(
        `miss ${s.id}: ${s.verdict} ${s.findings.map((f) => `${f.check} (${f.detail})`).join("; ")}\n`,
      );
}
