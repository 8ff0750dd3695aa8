// The bars on the held-out split of the committed corpus (corpus/: receipts and
// forgeries written by PDF software this project did not write; the held-out writers and
// re-saver were never looked at while tuning). `pnpm --filter @gw/receipts corpus:score`
// prints both splits.
import { beforeAll, describe, expect, it } from "vitest";
import { CONTRADICTION_CASES } from "../corpus/contradictions.ts";
import { type ScoredEntry, scoreCorpus } from "../corpus/score.ts";

describe("the review over the held-out writers of the corpus", () => {
  let scored: ScoredEntry[] = [];
  const of = (cls: string) => scored.filter((s) => s.expected === cls);
  const show = (s: ScoredEntry) => `${s.id}: ${s.verdict} [${s.checks.join(", ")}]`;

  beforeAll(async () => {
    scored = await scoreCorpus("heldout");
  }, 300_000);

  it("holds three whole writers and a re-saver, and every class", () => {
    expect(new Set(scored.map((s) => s.entry.writer)).size).toBeGreaterThanOrEqual(3);
    expect(scored.some((s) => s.entry.resaver === "mutool-clean")).toBe(true);
    for (const cls of ["genuine", "forgery", "in_progress", "declined", "unreadable"])
      expect(of(cls).length, cls).toBeGreaterThan(0);
  });

  it("ends at least 99 % of forgeries in potential_fake or rejected", () => {
    const missed = of("forgery").filter((s) => s.verdict !== "potential_fake" && s.verdict !== "rejected");
    expect(missed.length / of("forgery").length, missed.map(show).join("\n")).toBeLessThanOrEqual(0.01);
  });

  it("holds at most 1 % of genuine receipts", () => {
    const held = of("genuine").filter((s) => s.verdict !== "completed");
    expect(held.length / of("genuine").length, held.map(show).join("\n")).toBeLessThanOrEqual(0.01);
  });

  it("leaves every receipt in progress and every unreadable file not_terminal, never potential_fake", () => {
    expect(
      [...of("in_progress"), ...of("unreadable")].filter((s) => s.verdict !== "not_terminal").map(show),
    ).toEqual([]);
  });

  it("rejects every declined transfer", () => {
    expect(
      of("declined")
        .filter((s) => s.verdict !== "rejected")
        .map(show),
    ).toEqual([]);
  });

  it("catches a total that does not add up and dates that contradict, and completes honest fees and later stamps", () => {
    for (const c of CONTRADICTION_CASES) {
      const cases = scored.filter((s) => s.entry.file.includes(`-${c.name}.`));
      expect(cases.length, c.name).toBeGreaterThanOrEqual(2);
      for (const s of cases)
        if (c.expected === "genuine") expect(s.verdict, show(s)).toBe("completed");
        else expect(s.checks, show(s)).toContain("text_inconsistent");
    }
  });
});
