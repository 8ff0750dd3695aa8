import { describe, expect, it } from "vitest";
import { admissibleIntervals, formatCents, mergeIntervals, recommend, toCents } from "./policy.ts";

const c = toCents;
const show = (list: { lo: bigint; hi: bigint }[]) => list.map((i) => [formatCents(i.lo), formatCents(i.hi)]);

describe("amount arithmetic", () => {
  it("parses and prints scale-2 amounts exactly, signed deltas included", () => {
    expect([c("0.01"), c("1000.00"), c("12.5"), c("-7800.00")]).toEqual([1n, 100000n, 1250n, -780000n]);
    expect([formatCents(1n), formatCents(-5n), formatCents(123456789012345678n)]).toEqual([
      "0.01",
      "-0.05",
      "1234567890123456.78",
    ]);
  });

  it("gives a payout's remainder exactly, or the range that keeps the minimum, within the bounds", () => {
    expect(show(admissibleIntervals(c("1000.00"), c("100.00"), c("1.00"), c("5000.00")))).toEqual([
      ["100.00", "900.00"],
      ["1000.00", "1000.00"],
    ]);
    expect(show(admissibleIntervals(c("150.00"), c("100.00"), c("1.00"), c("5000.00")))).toEqual([
      ["150.00", "150.00"],
    ]);
    expect(show(admissibleIntervals(c("1000.00"), c("100.00"), c("950.00"), c("999.99")))).toEqual([]);
  });

  it("merges overlapping and touching intervals and keeps real gaps", () => {
    const merged = mergeIntervals([
      { lo: c("300.00"), hi: c("400.00") },
      { lo: c("100.00"), hi: c("200.00") },
      { lo: c("200.01"), hi: c("250.00") },
      { lo: c("350.00"), hi: c("380.00") },
      { lo: c("400.02"), hi: c("400.02") },
    ]);
    expect(show(merged)).toEqual([
      ["100.00", "250.00"],
      ["300.00", "400.00"],
      ["400.02", "400.02"],
    ]);
  });

  it("ranks exact remainders before nearer amounts inside a range", () => {
    const picked = recommend(
      [c("900.00"), c("1100.00")],
      [{ lo: c("100.00"), hi: c("1000.00") }],
      c("950.00"),
      c("100.00"),
      c("2000.00"),
      3,
    );
    expect(picked.map((p) => [formatCents(p.amount), p.exact])).toEqual([
      ["900.00", true],
      ["1100.00", true],
      ["950.00", false],
    ]);
  });
});
