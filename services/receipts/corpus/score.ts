// Reviews every file of the corpus as the service would (reuse from the earlier file the
// manifest names) and tallies the verdicts by split.
import { type ScoredCase, scoreCase } from "../src/testing/score.ts";
import { type CorpusEntry, fileOf, inputOf, loadManifest, type Split } from "./manifest.ts";

export interface ScoredEntry extends ScoredCase {
  entry: CorpusEntry;
}

export async function scoreEntry(e: CorpusEntry): Promise<ScoredEntry> {
  const scored = await scoreCase({
    id: e.file,
    split: e.split,
    expected: e.expected,
    technique: e.technique,
    file: fileOf(e.file),
    input: inputOf(e),
    earlier: e.earlier ? [fileOf(e.earlier)] : [],
  });
  return { ...scored, entry: e };
}

/** Every entry of `split` (or all), scored. */
export async function scoreCorpus(split?: Split): Promise<ScoredEntry[]> {
  const out: ScoredEntry[] = [];
  for (const e of loadManifest()) if (!split || e.split === split) out.push(await scoreEntry(e));
  return out;
}
