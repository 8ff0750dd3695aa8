import { describe, expect, it } from "vitest";
import { coveringFilter } from "./consumer.ts";
import { CONSUMER_SUBJECTS, poolPayinsSkip, subjectMatches, subjectsRegex } from "./subscriptions.ts";

describe("subjectMatches", () => {
  it("follows NATS wildcards: * one token, > one or more trailing tokens", () => {
    expect(subjectMatches("p.operations.payment.completed", "p.operations.payment.completed")).toBe(true);
    expect(subjectMatches("p.operations.payment.completed", "p.operations.payment.pending")).toBe(false);
    expect(subjectMatches("p.operations.>", "p.operations.payment.pending")).toBe(true);
    expect(subjectMatches("p.operations.>", "p.operations")).toBe(false);
    expect(subjectMatches("p.*.payment.pending", "p.operations.payment.pending")).toBe(true);
    expect(subjectMatches("p.*.payment", "p.operations.payment.pending")).toBe(false);
  });
});

describe("coveringFilter", () => {
  it("is the common tokens then >, never a whole subject", () => {
    expect(coveringFilter(["p.operations.payment.completed", "p.operations.payout.pending"])).toBe(
      "p.operations.>",
    );
    expect(coveringFilter(["p.operations.payment.completed", "p.operations.payment.rejected"])).toBe(
      "p.operations.payment.>",
    );
    expect(coveringFilter(["p.a.b", "p.a.b.c"])).toBe("p.a.>");
    expect(coveringFilter(["p.*.x", "p.*.y"])).toBe("p.>");
  });
});

describe("subjectsRegex", () => {
  it("matches, whatever the prefix, exactly the subjects on a consumer's list (as Postgres ~ would)", () => {
    const re = new RegExp(subjectsRegex(CONSUMER_SUBJECTS.ledger));
    expect(re.test("t_1a.operations.payment.completed")).toBe(true);
    expect(re.test("t_1a.operations.payout.cancelled")).toBe(true);
    expect(re.test("t_1a.operations.payment.pending")).toBe(false);
    expect(re.test("t_1a.operations.payment.completedx")).toBe(false);
    const facts = new RegExp(subjectsRegex(CONSUMER_SUBJECTS["ledger-provider-facts"]));
    expect(facts.test("gw.provider_facts.unmatched_payin")).toBe(true);
    expect(facts.test("gw.operations.payment.completed")).toBe(false);
  });
});

describe("poolPayinsSkip", () => {
  it("skips a payin's first event only when its create stated that the pool cannot hold a slot", () => {
    expect(poolPayinsSkip({ type: "payment.pending", poolMayHoldSlot: false })).toBe(true);
    expect(poolPayinsSkip({ type: "payment.awaiting_confirmation", poolMayHoldSlot: false })).toBe(true);
    expect(poolPayinsSkip({ type: "payment.pending", poolMayHoldSlot: true })).toBe(false);
    // An event written before the statement existed is applied.
    expect(poolPayinsSkip({ type: "payment.pending" })).toBe(false);
    for (const type of ["payment.completed", "payment.rejected", "payment.cancelled", "payment.refused"])
      expect(poolPayinsSkip({ type, poolMayHoldSlot: false })).toBe(false);
  });
});
