import { readdirSync, readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, expectTypeOf, it } from "vitest";
import { flexibleLinks, poolHandoffs, providerFacts, withdrawals } from "../db/schema.ts";
import { STORED_STATUS } from "../lifecycle/table.ts";
import type { OperationRow, Status } from "../model.ts";
import type { FactKind, Resolution } from "../provider-facts.ts";
import { HANDOFF_MACHINE } from "./handoff-states.ts";
import { LINK_MACHINE } from "./link-states.ts";
import { OPERATION_STATUSES, OPERATION_TYPES } from "./operation-states.ts";
import { FACT_DIRECTIONS, FACT_KINDS, FACT_MACHINE, FACT_RESOLUTIONS } from "./provider-fact-states.ts";
import {
  assertMove,
  canMove,
  fromStates,
  type StateMachine,
  StateMoveRefusedError,
  targets,
} from "./state-machine.ts";
import { PASSED_OVER, WITHDRAWAL_MACHINE } from "./withdrawal-states.ts";

// The four side state machines as properties, with no database: whatever moves are
// attempted, a row never leaves its table; nothing leaves a terminal state (but a
// passed-over withdrawal, asked again); every state is reachable from the one a row is
// written in; and the guard each write is built from (`fromStates`) agrees with the table.

type AnyMachine = StateMachine<string, string>;

/** Each machine, with the row scopes its moves know (withdrawals: passed over or not). */
const MACHINES: { m: AnyMachine; scopes: (string | undefined)[] }[] = [
  { m: LINK_MACHINE, scopes: [undefined] },
  { m: HANDOFF_MACHINE, scopes: [undefined] },
  { m: WITHDRAWAL_MACHINE, scopes: [undefined, PASSED_OVER] },
  { m: FACT_MACHINE, scopes: [undefined] },
];

/** What a guarded status write does: moves only when the row's state is in the guard. */
const guardedWrite = (m: AnyMachine, state: string, to: string, scope?: string) =>
  fromStates(m, to, undefined, scope).includes(state) ? to : state;

/** The states reachable from the initial one, for rows of `scope`. */
function reachable(m: AnyMachine, scope?: string): Set<string> {
  const seen = new Set([m.initial]);
  for (const s of seen) for (const to of targets(m, s, scope)) seen.add(to);
  return seen;
}

describe.each(MACHINES)("the $m.table state table", ({ m, scopes }) => {
  it("is well formed: distinct states, moves and the initial state among them, a terminal state has none of its own", () => {
    expect(new Set(m.states).size).toBe(m.states.length);
    expect(m.states).toContain(m.initial);
    for (const r of m.moves) {
      expect(m.states).toContain(r.from);
      expect(m.states).toContain(r.to);
      expect(r.when.length).toBeGreaterThan(0);
    }
    for (const s of m.terminal) expect(m.states).toContain(s);
    expect(m.terminal.has(m.initial)).toBe(false);
  });

  it("keeps a row in the table whatever moves are attempted, and a refused move changes nothing", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...scopes),
        fc.array(fc.oneof(fc.constantFrom(...m.states), fc.string({ maxLength: 12 })), { maxLength: 40 }),
        (scope, attempts) => {
          let state: string = m.initial;
          for (const to of attempts) {
            const allowed = m.states.includes(to) && canMove(m, state, to, scope);
            if (allowed) expect(() => assertMove(m, state, to, scope)).not.toThrow();
            else expect(() => assertMove(m, state, to, scope)).toThrow(StateMoveRefusedError);
            // The guarded write agrees with the table: it moves exactly when the table does.
            const next = m.states.includes(to) ? guardedWrite(m, state, to, scope) : state;
            expect(next).toBe(allowed ? to : state);
            state = next;
            expect(m.states).toContain(state);
          }
        },
      ),
    );
  });

  it("never leaves a terminal state (a passed-over withdrawal is only ever asked again)", () => {
    fc.assert(
      fc.property(fc.constantFrom(...m.terminal), fc.constantFrom(...m.states), (from, to) => {
        expect(canMove(m, from, to)).toBe(false);
        for (const scope of scopes.filter((s) => s !== undefined))
          if (canMove(m, from, to, scope)) expect(to).toBe(m.initial);
      }),
    );
  });

  it("reaches every state from the initial one", () => {
    const all = new Set(scopes.flatMap((scope) => [...reachable(m, scope)]));
    expect([...all].sort()).toEqual([...m.states].sort());
  });

  it("ends every non-terminal state somewhere terminal: no state is a dead end", () => {
    for (const scope of scopes) {
      for (const s of m.states.filter((x) => !m.terminal.has(x))) {
        const from = new Set([s]);
        for (const x of from) for (const to of targets(m, x, scope)) from.add(to);
        expect([...from].some((x) => m.terminal.has(x))).toBe(true);
      }
    }
  });
});

describe('docs/architecture.md, "The side state machines"', () => {
  const doc = readFileSync(new URL("../../../../docs/architecture.md", import.meta.url), "utf8");
  it.each(MACHINES)("shows the $m.table table's initial state and every state", ({ m }) => {
    const row = doc.split("\n").find((l) => l.startsWith(`| \`${m.table}\` (`));
    const cells = (row ?? "").split(" | ");
    expect(cells[1]).toBe(`\`${m.initial}\``);
    for (const state of m.states) expect(row).toContain(`\`${state}\``);
  });
});

describe("the withdrawal table", () => {
  it("asks again only a passed-over row, and leaves a cancel's withdrawal where it ended", () => {
    for (const end of WITHDRAWAL_MACHINE.terminal) {
      expect(canMove(WITHDRAWAL_MACHINE, end, "asking")).toBe(false);
      expect(canMove(WITHDRAWAL_MACHINE, end, "asking", PASSED_OVER)).toBe(true);
    }
    // `held`: a passed-over payin its provider holds now; a cancel's withdrawal never is.
    expect(canMove(WITHDRAWAL_MACHINE, "asking", "held")).toBe(false);
    expect(canMove(WITHDRAWAL_MACHINE, "asking", "held", PASSED_OVER)).toBe(true);
  });
});

/** The values each `CHECK … in (…)` of the operations schema lists, as the migrations leave them. */
function checkedStates(): Map<string, string[]> {
  const folder = new URL("../../drizzle/", import.meta.url);
  const checks = new Map<string, string[]>();
  for (const file of readdirSync(folder)
    .filter((f) => f.endsWith(".sql"))
    .sort()) {
    const text = readFileSync(new URL(file, folder), "utf8");
    for (const [, name, list] of text.matchAll(/CONSTRAINT "(\w+)" CHECK \([^;]*?" in \(([^)]*)\)\)/g))
      checks.set(
        name as string,
        (list as string).split(",").map((s) => s.trim().replace(/^'|'$/g, "")),
      );
  }
  return checks;
}

describe("the schema's status CHECKs", () => {
  it("list exactly the states of each table, as migrated", () => {
    const checks = checkedStates();
    expect(checks.get("flexible_links_status")).toEqual([...LINK_MACHINE.states]);
    expect(checks.get("pool_handoffs_status")).toEqual([...HANDOFF_MACHINE.states]);
    expect(checks.get("withdrawals_status")).toEqual([...WITHDRAWAL_MACHINE.states]);
    expect(checks.get("provider_facts_status")).toEqual([...FACT_MACHINE.states]);
    expect(checks.get("operations_status")).toEqual([...OPERATION_STATUSES]);
  });

  it("list the other value sets as the domain and the model have them", () => {
    const checks = checkedStates();
    expect(checks.get("operations_type")).toEqual([...OPERATION_TYPES]);
    expect(checks.get("provider_facts_kind")).toEqual([...FACT_KINDS]);
    expect(checks.get("provider_facts_direction")).toEqual([...FACT_DIRECTIONS]);
    expect(checks.get("provider_facts_resolution")).toEqual([...FACT_RESOLUTIONS]);
    expectTypeOf<(typeof OPERATION_TYPES)[number]>().toEqualTypeOf<OperationRow["type"]>();
    expectTypeOf<(typeof FACT_KINDS)[number]>().toEqualTypeOf<FactKind>();
    expectTypeOf<(typeof FACT_RESOLUTIONS)[number]>().toEqualTypeOf<Resolution>();
  });

  it("list the operation lifecycle's stored statuses, every one of the model's", () => {
    expect([...OPERATION_STATUSES].sort()).toEqual([...new Set(Object.values(STORED_STATUS))].sort());
    expectTypeOf<(typeof OPERATION_STATUSES)[number]>().toEqualTypeOf<Status>();
  });

  it("default each status column with a defaulted status to the initial state", () => {
    expect(poolHandoffs.status.default).toBe(HANDOFF_MACHINE.initial);
    expect(withdrawals.status.default).toBe(WITHDRAWAL_MACHINE.initial);
    expect(providerFacts.status.default).toBe(FACT_MACHINE.initial);
    expect(flexibleLinks.status.hasDefault).toBe(false);
  });
});
