import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type CascadeAction, type CascadeAnswer, nextAction } from "./cascade.ts";

// docs/architecture.md states the cascade as a decision table ("The create cascade"): for a
// route [a, b], the answers `a` gave so far, the direction and the budget, the next action.
// Every row is run against `nextAction`, and the table must show every action and every
// answer the code knows, so the doc cannot drift from the decider.

const ARCHITECTURE = new URL("../../../../docs/architecture.md", import.meta.url);

/** Every action kind and answer of the code; the compiler fails here when one is added. */
const ACTION_KINDS = {
  create: true,
  status: true,
  withdraw: true,
  take: true,
  pass_withdrawing: true,
  refuse: true,
  unresolved: true,
} satisfies Record<CascadeAction["kind"], true>;
const ANSWERS = {
  accepted: true,
  declined: true,
  withdrawn: true,
  unknown: true,
  not_found: true,
  no_withdrawal: true,
  passed_withdrawing: true,
} satisfies Record<CascadeAnswer, true>;

interface Row {
  line: string;
  directions: ("payin" | "payout")[];
  answers: CascadeAnswer[];
  budgets: number[];
  action: CascadeAction;
}

const unquote = (cell: string) => cell.replace(/^`|`$/g, "");

/** `unknown, not_found ×5` → the answers in order; `—` → none. */
function parseAnswers(cell: string): CascadeAnswer[] {
  if (cell === "—") return [];
  return unquote(cell)
    .split(",")
    .flatMap((part) => {
      const [answer, times] = part.trim().split(" ×");
      if (!answer || !(answer in ANSWERS)) throw new Error(`unknown answer in the doc: ${part}`);
      return Array.from({ length: times ? Number(times) : 1 }, () => answer as CascadeAnswer);
    });
}

/** `create a` → `{ kind: "create", provider: "a" }`; `refuse` → `{ kind: "refuse" }`. */
function parseAction(cell: string): CascadeAction {
  const [kind, provider] = unquote(cell).split(" ");
  if (!kind || !(kind in ACTION_KINDS)) throw new Error(`unknown action in the doc: ${cell}`);
  return (provider === undefined ? { kind } : { kind, provider }) as CascadeAction;
}

function tableRows(): Row[] {
  const doc = readFileSync(ARCHITECTURE, "utf8");
  return doc
    .split("\n")
    .filter((l) => /^\| (payin|payout|either) \| /.test(l))
    .map((line) => {
      const [direction, answers, budget, action] = line
        .split("|")
        .slice(1, 5)
        .map((c) => c.trim()) as [string, string, string, string];
      const budgets =
        budget === "left" ? [1_000] : budget === "spent" ? [0] : budget === "any" ? [1_000, 0] : [];
      if (budgets.length === 0) throw new Error(`unknown budget in the doc: ${budget}`);
      return {
        line,
        directions: direction === "either" ? ["payin", "payout"] : [direction as "payin" | "payout"],
        answers: parseAnswers(answers),
        budgets,
        action: parseAction(action),
      };
    });
}

describe("docs/architecture.md, the cascade decision table", () => {
  const rows = tableRows();

  it("has rows", () => {
    expect(rows.length).toBeGreaterThan(10);
  });

  it("agrees with nextAction on every row", () => {
    for (const row of rows)
      for (const direction of row.directions)
        for (const budgetLeftMs of row.budgets) {
          const got = nextAction({
            route: ["a", "b"],
            answers: new Map([["a", row.answers]]),
            direction,
            budgetLeftMs,
          });
          expect(got, `${row.line} (${direction}, budget ${budgetLeftMs})`).toEqual(row.action);
        }
  });

  it("shows every action and every answer the code knows", () => {
    const kinds = new Set(rows.map((r) => r.action.kind));
    const answers = new Set(rows.flatMap((r) => r.answers));
    expect([...kinds].sort()).toEqual(Object.keys(ACTION_KINDS).sort());
    expect([...answers].sort()).toEqual(Object.keys(ANSWERS).sort());
  });
});
