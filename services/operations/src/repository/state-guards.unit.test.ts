import type { Sql } from "@gw/db";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HANDOFF_MACHINE } from "../domain/handoff-states.ts";
import { LINK_MACHINE } from "../domain/link-states.ts";
import { FACT_MACHINE } from "../domain/provider-fact-states.ts";
import { canMove, fromStates, StateMoveRefusedError } from "../domain/state-machine.ts";
import { PASSED_OVER, WITHDRAWAL_MACHINE } from "../domain/withdrawal-states.ts";
import type { Tx } from "./db.ts";
import { HandOffRepository, type HandOffRow, insertHandOff } from "./handoffs.ts";
import { LinkRepository } from "./links.ts";
import { insertFact, markFactResolved } from "./provider-facts.ts";
import {
  insertPassedOver,
  insertWithdrawal,
  WithdrawalRepository,
  type WithdrawalRow,
} from "./withdrawals.ts";

// What the repositories write, read off the statements they send (no database: a tag that
// records each statement and answers what the test says): every status write is guarded
// by the states its table moves from, writes a state of its table, and a row is inserted
// in its table's initial state. state-checks.test.ts shows the guards and CHECKs on Postgres.

interface Statement {
  text: string;
  values: unknown[];
}

/** A `sql` tag that records every statement and answers each with the next of `answers` (else no rows). */
function recorder(answers: unknown[][] = []) {
  const statements: Statement[] = [];
  const tag = (strings: TemplateStringsArray, ...values: unknown[]) => {
    statements.push({ text: strings.join("$"), values });
    return Promise.resolve(answers.shift() ?? []);
  };
  return { sql: tag as unknown as Sql & Tx, statements };
}

/** The value bound to `status = any($)` in a statement (the guard), and to `set status = $` (the move). */
function guardOf(s: Statement | undefined): unknown {
  const parts = s?.text.split("$") ?? [];
  const i = parts.findIndex((p) => /status = any\($/.test(p));
  return i < 0 ? undefined : s?.values[i];
}
function writtenOf(s: Statement | undefined): unknown {
  const parts = s?.text.split("$") ?? [];
  const i = parts.findIndex((p) => /set (?:[\s\S]*, )?status = $/.test(p) || /\bset status = $/.test(p));
  return i < 0 ? undefined : s?.values[i];
}

const handOff: HandOffRow = {
  operation_id: "op",
  amount: "10.00",
  candidates: ["a", "b"],
  position: 0,
  attempts: 0,
};
const withdrawal = (passedOver: boolean): WithdrawalRow => ({
  operation_id: "op",
  provider: "a",
  attempts: 0,
  passed_over: passedOver,
});

describe("flexible links", () => {
  it("decides a link only from the states its table moves from, to a state of the table", async () => {
    for (const to of LINK_MACHINE.states) {
      const { sql, statements } = recorder([[1]]);
      const links = new LinkRepository(sql);
      if (fromStates(LINK_MACHINE, to).length === 0) {
        await expect(links.decide("id", "claim", to)).rejects.toBeInstanceOf(StateMoveRefusedError);
        expect(statements).toHaveLength(0);
        continue;
      }
      expect(await links.decide("id", "claim", to)).toBe(true);
      expect(guardOf(statements[0])).toEqual(fromStates(LINK_MACHINE, to));
      expect(writtenOf(statements[0])).toBe(to);
    }
  });

  it("refuses a move from a state the claim holder's link cannot leave; a lapsed claim is only `false`", async () => {
    const held = recorder([[], [{ status: "created" }]]);
    await expect(new LinkRepository(held.sql).decide("id", "claim", "rejected")).rejects.toThrow(
      "flexible_links id: created → rejected is not in its state table",
    );
    const lapsed = recorder([[], []]);
    expect(await new LinkRepository(lapsed.sql).decide("id", "claim", "rejected")).toBe(false);
  });

  it("writes a new link in the initial state", async () => {
    const { sql, statements } = recorder();
    await new LinkRepository(sql).insert({} as never, 1000);
    expect(statements[0]?.text).toContain("insert into operations.flexible_links");
    expect(statements[0]?.values).toContain(LINK_MACHINE.initial);
  });
});

describe("pool hand-offs", () => {
  it("guards every write by the states its table moves from", async () => {
    const { sql, statements } = recorder([[1], [1]]);
    const repo = new HandOffRepository(sql);
    await repo.accept(sql, handOff, "a");
    await repo.exhaust(sql, handOff);
    await repo.supersede("op");
    await repo.retryLater(handOff, 1, 100);
    await repo.advance(handOff);
    const [accept, exhaust, supersede, retry, advance] = statements;
    expect(writtenOf(accept)).toBe("accepted");
    expect(guardOf(accept)).toEqual(fromStates(HANDOFF_MACHINE, "accepted"));
    expect(writtenOf(exhaust)).toBe("exhausted");
    expect(guardOf(exhaust)).toEqual(fromStates(HANDOFF_MACHINE, "exhausted"));
    expect(writtenOf(supersede)).toBe("superseded");
    expect(guardOf(supersede)).toEqual(fromStates(HANDOFF_MACHINE, "superseded"));
    expect(guardOf(retry)).toEqual(fromStates(HANDOFF_MACHINE, "asking", "unanswered"));
    expect(guardOf(advance)).toEqual(fromStates(HANDOFF_MACHINE, "asking", "passed_over"));
  });

  it("writes a new hand-off in the initial state", async () => {
    const { sql, statements } = recorder();
    await insertHandOff(sql, "op", "10.00", ["a"]);
    expect(statements[0]?.values).toContain(HANDOFF_MACHINE.initial);
  });
});

describe("withdrawals", () => {
  it("ends an ask exactly when the table has the move, guarded by the states it moves from", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.oneof(fc.constantFrom(...WITHDRAWAL_MACHINE.states), fc.string({ maxLength: 10 })),
        async (passedOver, to) => {
          const scope = passedOver ? PASSED_OVER : undefined;
          const { sql, statements } = recorder([[1]]);
          const end = new WithdrawalRepository(sql).end(withdrawal(passedOver), to, null);
          const allowed =
            to !== "asking" &&
            (WITHDRAWAL_MACHINE.states as readonly string[]).includes(to) &&
            canMove(WITHDRAWAL_MACHINE, "asking", to as "withdrawn", scope);
          if (!allowed) {
            await expect(end).rejects.toBeInstanceOf(StateMoveRefusedError);
            expect(statements).toHaveLength(0);
            return;
          }
          expect(await end).toBe(true);
          expect(writtenOf(statements[0])).toBe(to);
          expect(guardOf(statements[0])).toEqual(
            fromStates(WITHDRAWAL_MACHINE, to as "withdrawn", undefined, scope),
          );
        },
      ),
    );
  });

  it("keeps a second end a no-op: not asking any more is `false`, never an error", async () => {
    const { sql } = recorder([[]]);
    expect(await new WithdrawalRepository(sql).end(withdrawal(false), "withdrawn", null)).toBe(false);
  });

  it("writes a new withdrawal in the initial state and asks a passed-over one again from the states the table allows", async () => {
    const { sql, statements } = recorder();
    await insertWithdrawal(sql, "op", "a");
    await insertPassedOver(sql, "op", "a", 1000);
    const [cancel, , passedOver] = statements;
    for (const s of [cancel, passedOver]) {
      expect(s?.values[2]).toBe(WITHDRAWAL_MACHINE.initial);
      expect(writtenOf(s)).toBe("asking");
    }
    expect(guardOf(cancel)).toEqual(fromStates(WITHDRAWAL_MACHINE, "asking", "cancelled", PASSED_OVER));
    expect(guardOf(passedOver)).toEqual(
      fromStates(WITHDRAWAL_MACHINE, "asking", "passed_over_again", PASSED_OVER),
    );
  });

  it("retries only an ask still asking", async () => {
    const { sql, statements } = recorder();
    await new WithdrawalRepository(sql).retryLater(withdrawal(false), 1, "timeout", 100);
    expect(guardOf(statements[0])).toEqual(fromStates(WITHDRAWAL_MACHINE, "asking", "unanswered"));
  });
});

describe("provider facts", () => {
  it("resolves a fact only from the states its table moves from", async () => {
    const { sql, statements } = recorder([[{ id: "f", status: "resolved" }]]);
    await markFactResolved(sql, "f", { action: "write_off", operator: "o", reason: "r", figures: undefined });
    expect(writtenOf(statements[0])).toBe("resolved");
    expect(guardOf(statements[0])).toEqual(fromStates(FACT_MACHINE, "resolved"));
  });

  it("refuses to resolve a resolved fact again; an unknown fact is undefined", async () => {
    const resolution = { action: "write_off", operator: "o", reason: "r", figures: undefined };
    const resolved = recorder([[], [{ status: "resolved" }]]);
    await expect(markFactResolved(resolved.sql, "f", resolution)).rejects.toBeInstanceOf(
      StateMoveRefusedError,
    );
    const unknown = recorder([[], []]);
    expect(await markFactResolved(unknown.sql, "f", resolution)).toBeUndefined();
  });

  it("records a new fact in the initial state", async () => {
    const { sql, statements } = recorder();
    await insertFact(sql, {} as never);
    expect(statements[0]?.values.at(-1)).toBe(FACT_MACHINE.initial);
  });
});
