import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type CascadeAction, type CascadeAnswer, nextAction } from "./cascade.ts";

// The routing decision as properties: whatever the providers answer, in whatever order,
// a payout is never live at two providers, a provider is never asked again after it
// withdrew, and nobody is asked anything once the budget is spent.

/** The answers a provider may give to each kind of question. */
const POSSIBLE: Record<"create" | "status" | "withdraw", CascadeAnswer[]> = {
  create: ["accepted", "declined", "unknown"],
  status: ["accepted", "declined", "withdrawn", "unknown", "not_found"],
  withdraw: ["withdrawn", "accepted", "declined", "unknown", "no_withdrawal"],
};

interface Run {
  steps: { action: CascadeAction; answers: Map<string, CascadeAnswer[]>; budgetLeftMs: number }[];
  end: CascadeAction;
}

/** Drives the cascade with the answers and costs the arbitraries chose, until it ends. */
function simulate(
  route: string[],
  direction: "payin" | "payout",
  budgetMs: number,
  picks: number[],
  costs: number[],
  notFoundPatience?: number,
): Run {
  const answers = new Map<string, CascadeAnswer[]>();
  let budgetLeftMs = budgetMs;
  const steps: Run["steps"] = [];
  for (let i = 0; ; i++) {
    const action = nextAction({
      route,
      answers,
      direction,
      budgetLeftMs,
      ...(notFoundPatience === undefined ? {} : { notFoundPatience }),
    });
    const snapshot = new Map([...answers].map(([k, v]) => [k, [...v]]));
    steps.push({ action, answers: snapshot, budgetLeftMs });
    if (action.kind === "take" || action.kind === "refuse" || action.kind === "unresolved")
      return { steps, end: action };
    const given = answers.get(action.provider) ?? [];
    if (action.kind === "pass_withdrawing") {
      answers.set(action.provider, [...given, "passed_withdrawing"]);
    } else {
      const options = POSSIBLE[action.kind];
      const answer = options[(picks[i % picks.length] ?? 0) % options.length] as CascadeAnswer;
      answers.set(action.provider, [...given, answer]);
    }
    budgetLeftMs -= costs[i % costs.length] ?? 1;
    if (i > 10_000) throw new Error("the cascade never ended");
  }
}

const arbitraries = {
  route: fc.uniqueArray(fc.constantFrom("a", "b", "c", "d", "e"), { minLength: 1, maxLength: 5 }),
  direction: fc.constantFrom("payin" as const, "payout" as const),
  budget: fc.integer({ min: -5, max: 200 }),
  picks: fc.array(fc.nat(), { minLength: 1, maxLength: 50 }),
  costs: fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 20 }),
  /** A later driver's patience (1) or the create's, or any other. */
  patience: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
};

const asks = (a: CascadeAction) => a.kind === "create" || a.kind === "status" || a.kind === "withdraw";

describe("the cascade's routing decision", () => {
  it("never has a payout live at two providers: nobody new is asked while another may hold it", () => {
    fc.assert(
      fc.property(
        arbitraries.route,
        arbitraries.budget,
        arbitraries.picks,
        arbitraries.costs,
        (route, b, p, c) => {
          const run = simulate(route, "payout", b, p, c);
          // The oracle, independent of `standing`: a provider that was asked anything is
          // rid of the payout only once it declined or confirmed a withdrawal.
          const rid = (given: readonly CascadeAnswer[]) =>
            given.includes("declined") || given.includes("withdrawn");
          for (const { action, answers } of run.steps) {
            if (action.kind !== "create" && action.kind !== "take") continue;
            for (const [provider, given] of answers) {
              if (provider === action.provider) continue;
              expect(rid(given)).toBe(true);
            }
          }
          // The end: refused only when every provider asked is rid of it.
          if (run.end.kind === "refuse") {
            const last = run.steps.at(-1)?.answers ?? new Map<string, CascadeAnswer[]>();
            for (const given of last.values()) expect(rid(given)).toBe(true);
          }
        },
      ),
    );
  });

  it("never asks a provider anything again after it confirmed a withdrawal or declined", () => {
    fc.assert(
      fc.property(
        arbitraries.route,
        arbitraries.direction,
        arbitraries.budget,
        arbitraries.picks,
        arbitraries.costs,
        (route, direction, b, p, c) => {
          for (const { action, answers } of simulate(route, direction, b, p, c).steps) {
            if (!asks(action) && action.kind !== "pass_withdrawing") continue;
            const given = answers.get((action as { provider: string }).provider) ?? [];
            expect(given).not.toContain("withdrawn");
            expect(given).not.toContain("declined");
          }
        },
      ),
    );
  });

  it("never asks anything once the budget is spent", () => {
    fc.assert(
      fc.property(
        arbitraries.route,
        arbitraries.direction,
        arbitraries.budget,
        arbitraries.picks,
        arbitraries.costs,
        (route, direction, b, p, c) => {
          for (const { action, budgetLeftMs } of simulate(route, direction, b, p, c).steps)
            if (budgetLeftMs <= 0) expect(asks(action)).toBe(false);
        },
      ),
    );
  });

  it("keeps a payout at a provider that only ever answers not_found, however often asked", () => {
    const early = new Map<string, CascadeAnswer[]>([["a", ["unknown", "not_found"]]]);
    expect(nextAction({ route: ["a", "b"], answers: early, direction: "payout", budgetLeftMs: 1 })).toEqual({
      kind: "status",
      provider: "a",
    });
    const answers = new Map<string, CascadeAnswer[]>([["a", ["unknown", ...Array(50).fill("not_found")]]]);
    expect(nextAction({ route: ["a", "b"], answers, direction: "payout", budgetLeftMs: 1 })).toEqual({
      kind: "withdraw",
      provider: "a",
    });
    answers.set("a", [...(answers.get("a") ?? []), "no_withdrawal", "not_found"]);
    expect(nextAction({ route: ["a", "b"], answers, direction: "payout", budgetLeftMs: 1 })).toEqual({
      kind: "status",
      provider: "a",
    });
    expect(nextAction({ route: ["a", "b"], answers, direction: "payout", budgetLeftMs: 0 })).toEqual({
      kind: "unresolved",
      provider: "a",
    });
  });

  it("asks a later driver's first not_found for the withdrawal: a whole budget has passed since the create", () => {
    const takenOver = new Map<string, CascadeAnswer[]>([["a", ["unknown", "not_found"]]]);
    const state = { route: ["a", "b"], answers: takenOver, direction: "payout" as const, budgetLeftMs: 1 };
    expect(nextAction(state)).toEqual({ kind: "status", provider: "a" });
    expect(nextAction({ ...state, notFoundPatience: 1 })).toEqual({ kind: "withdraw", provider: "a" });
    // Patience only decides when the withdrawal is asked: without a confirmed one, nobody after.
    takenOver.set("a", ["unknown", "not_found", "unknown"]);
    expect(nextAction({ ...state, notFoundPatience: 1 })).toEqual({ kind: "status", provider: "a" });
  });

  it("moves a payout on after a confirmed withdrawal, and a payin at once after an unknown answer", () => {
    const withdrawn = new Map<string, CascadeAnswer[]>([["a", ["unknown", "not_found", "withdrawn"]]]);
    expect(
      nextAction({ route: ["a", "b"], answers: withdrawn, direction: "payout", budgetLeftMs: 5 }),
    ).toEqual({
      kind: "create",
      provider: "b",
    });
    const lost = new Map<string, CascadeAnswer[]>([["a", ["unknown"]]]);
    expect(nextAction({ route: ["a", "b"], answers: lost, direction: "payin", budgetLeftMs: 5 })).toEqual({
      kind: "pass_withdrawing",
      provider: "a",
    });
  });
});

describe("the cascade's routing decision, whoever drives it (any not_found patience)", () => {
  const run = (
    route: string[],
    direction: "payin" | "payout",
    b: number,
    p: number[],
    c: number[],
    patience: number | undefined,
  ) => simulate(route, direction, b, p, c, patience);

  it("never has a payout live at two providers", () => {
    fc.assert(
      fc.property(
        arbitraries.route,
        arbitraries.budget,
        arbitraries.picks,
        arbitraries.costs,
        arbitraries.patience,
        (route, b, p, c, patience) => {
          const rid = (given: readonly CascadeAnswer[]) =>
            given.includes("declined") || given.includes("withdrawn");
          const { steps, end } = run(route, "payout", b, p, c, patience);
          for (const { action, answers } of [...steps, { action: end, answers: steps.at(-1)?.answers }]) {
            if (action.kind !== "create" && action.kind !== "take") continue;
            // Asked or taken: every other provider ever asked is rid of it.
            for (const [provider, given] of answers ?? [])
              if (provider !== action.provider) expect(rid(given)).toBe(true);
          }
        },
      ),
    );
  });

  it("never asks a provider again once it declined, withdrew, or was passed over unanswered with its withdrawal recorded", () => {
    fc.assert(
      fc.property(
        arbitraries.route,
        arbitraries.direction,
        arbitraries.budget,
        arbitraries.picks,
        arbitraries.costs,
        arbitraries.patience,
        (route, direction, b, p, c, patience) => {
          const out = new Set<string>();
          for (const { action, answers } of run(route, direction, b, p, c, patience).steps) {
            for (const [provider, given] of answers)
              if (
                given.includes("declined") ||
                given.includes("withdrawn") ||
                given.includes("passed_withdrawing")
              )
                out.add(provider);
            const named = "provider" in action ? action.provider : undefined;
            if (named !== undefined) expect(out.has(named)).toBe(false);
            if (action.kind === "pass_withdrawing") out.add(action.provider);
          }
        },
      ),
    );
  });

  it("never asks anything once the budget is spent, and ends within a bounded number of asks", () => {
    fc.assert(
      fc.property(
        arbitraries.route,
        arbitraries.direction,
        arbitraries.budget,
        arbitraries.picks,
        arbitraries.costs,
        arbitraries.patience,
        (route, direction, b, p, c, patience) => {
          const { steps } = run(route, direction, b, p, c, patience);
          let asked = 0;
          for (const { action, budgetLeftMs } of steps) {
            if (!asks(action)) continue;
            expect(budgetLeftMs).toBeGreaterThan(0);
            asked++;
          }
          // Every ask costs at least 1 ms of the budget: no more asks than it had.
          expect(asked).toBeLessThanOrEqual(Math.max(0, b));
        },
      ),
    );
  });
});
