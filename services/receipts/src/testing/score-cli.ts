// `pnpm --filter @gw/receipts score [--count N] [--start I] [--split S] [--misses]`: builds
// N cases (default 300, from index I) of each split of the corpus (or of split S alone),
// reviews them in process and prints the confusion tables.
// `--misses` lists the tuning split's cases that miss their bar (never the held-out ones:
// the checks are not tuned on those).
import { parseArgs } from "node:util";
import { corpusCase, type Split } from "./corpus.ts";
import { meetsBar, report, type ScoredCase, scoreCase } from "./score.ts";

const { values } = parseArgs({
  options: {
    count: { type: "string", default: "300" },
    start: { type: "string", default: "0" },
    split: { type: "string" },
    misses: { type: "boolean", default: false },
  },
});
const count = Number(values.count);
const start = Number(values.start);
for (const split of ["tuning", "heldout"] as Split[]) {
  if (values.split && values.split !== split) continue;
  const scored: ScoredCase[] = [];
  for (let i = start; i < start + count; i++) scored.push(await scoreCase(await corpusCase(split, i)));
  process.stdout.write(`${report(`${split} split`, scored)}\n\n`);
  if (values.misses && split === "tuning")
    for (const s of scored.filter((x) => !meetsBar(x)))
      process.stdout.write(
        `miss ${s.id}: ${s.verdict} ${s.findings.map((f) => `${f.check} (${f.detail})`).join("; ")}\n`,
      );
}
