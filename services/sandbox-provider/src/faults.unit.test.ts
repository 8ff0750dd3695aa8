import { describe, expect, it } from "vitest";
import {
  CREATE_FAULTS,
  faultFor,
  faultProfileSchema,
  faultyLegs,
  pick,
  roll,
  statusFault,
} from "./faults.ts";

const key = (reference: string) => ({ provider: "p", direction: "payin", reference });

describe("fault rolls", () => {
  it("give the same fault for the same seed and reference, so a run repeats", () => {
    const profile = faultProfileSchema.parse({ seed: "s1", create: { accept_then_5xx: 0.5 } });
    const first = Array.from({ length: 50 }, (_, i) =>
      faultFor(profile, "create", CREATE_FAULTS, key(`r${i}`)),
    );
    const again = Array.from({ length: 50 }, (_, i) =>
      faultFor(profile, "create", CREATE_FAULTS, key(`r${i}`)),
    );
    expect(again).toEqual(first);
  });

  it("mix the faults of a stage by their probabilities within one run", () => {
    const table = { accept_then_5xx: 0.3, never_answer: 0.3 };
    const seen = new Set(Array.from({ length: 200 }, (_, i) => pick(table, CREATE_FAULTS, roll("mix", i))));
    expect(seen).toEqual(new Set(["accept_then_5xx", "never_answer", undefined]));
  });

  it("refuse a stage whose probabilities add up to more than one", () => {
    expect(
      faultProfileSchema.safeParse({ create: { accept_then_5xx: 0.6, never_answer: 0.6 } }).success,
    ).toBe(false);
  });

  it("put the status endpoint down for its stretch and only then", () => {
    const profile = faultProfileSchema.parse({ status_down: { every_ms: 10_000, for_ms: 2_000 } });
    expect(statusFault(profile, key("r"), 1, 1_000_001_000)).toBe("down");
    expect(statusFault(profile, key("r"), 1, 1_000_005_000)).toBeUndefined();
  });
});

describe("faulty legs", () => {
  it("add up to the amount without a fault or when split", () => {
    expect(faultyLegs(100000n, undefined, 0.3)).toEqual([100000n]);
    for (const r of [0.1, 0.6, 0.99]) {
      const legs = faultyLegs(100000n, "split", r);
      expect(legs.length).toBeGreaterThan(1);
      expect(legs.reduce((a, b) => a + b, 0n)).toBe(100000n);
      expect(legs.every((l) => l > 0n)).toBe(true);
    }
  });

  it("fall short of or go above the amount under those faults", () => {
    expect(faultyLegs(100000n, "short", 0.5).reduce((a, b) => a + b, 0n)).toBeLessThan(100000n);
    expect(faultyLegs(100000n, "over", 0.5).reduce((a, b) => a + b, 0n)).toBeGreaterThan(100000n);
  });
});
