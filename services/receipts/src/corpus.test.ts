// The bars on a sample of the held-out split of the generated corpus (the checks
// were never tuned on it): every case built from its seed, read in process and reviewed
// as the service reviews it. The whole corpus is scored by `pnpm --filter @gw/receipts score`.
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { corpusCase, techniqueOf } from "./testing/corpus.ts";
import { FINGERPRINTS_FILE, learnFingerprints } from "./testing/learn-fingerprints.ts";
import { type ScoredCase, scoreCase } from "./testing/score.ts";

/** The first two held-out cases of every technique: 36 cases, a few seconds. */
const SAMPLE = (() => {
  const seen = new Map<string, number>();
  const out: number[] = [];
  for (let i = 0; out.length < 36 && i < 1000; i++) {
    const [, technique] = techniqueOf("heldout", i);
    if ((seen.get(technique) ?? 0) >= 2) continue;
    seen.set(technique, (seen.get(technique) ?? 0) + 1);
    out.push(i);
  }
  return out;
})();

describe("the review over the held-out corpus", () => {
  const scored: ScoredCase[] = [];
  const of = (cls: string) => scored.filter((s) => s.expected === cls);

  beforeAll(async () => {
    for (const i of SAMPLE) scored.push(await scoreCase(await corpusCase("heldout", i)));
  }, 120_000);

  it("has every class in the sample", () => {
    for (const cls of ["genuine", "forgery", "in_progress", "declined", "unreadable"])
      expect(of(cls).length, cls).toBeGreaterThan(0);
  });

  it("ends at least 99 % of forgeries in manual_check potential_fake or rejected", () => {
    const missed = of("forgery").filter((s) => s.verdict !== "potential_fake" && s.verdict !== "rejected");
    expect(missed.length / of("forgery").length, missed.map((s) => s.id).join(", ")).toBeLessThanOrEqual(
      0.01,
    );
  });

  it("holds at most 1 % of genuine receipts", () => {
    const held = of("genuine").filter((s) => s.verdict !== "completed");
    expect(
      held.length / of("genuine").length,
      held.map((s) => `${s.id}: ${s.checks}`).join(", "),
    ).toBeLessThanOrEqual(0.01);
  });

  it("leaves every file in progress or not readable not_terminal, never potential_fake", () => {
    const wrong = [...of("in_progress"), ...of("unreadable")].filter((s) => s.verdict !== "not_terminal");
    expect(wrong.map((s) => `${s.id}: ${s.verdict} ${s.checks}`)).toEqual([]);
  });

  it("rejects every declined transfer", () => {
    expect(
      of("declined")
        .filter((s) => s.verdict !== "rejected")
        .map((s) => s.id),
    ).toEqual([]);
  });
});

describe("writer fingerprints", () => {
  it("are what the genuine fixtures teach (run `pnpm --filter @gw/receipts learn` when a writer changes)", async () => {
    expect(JSON.parse(readFileSync(FINGERPRINTS_FILE, "utf8"))).toEqual(await learnFingerprints());
  });
});
