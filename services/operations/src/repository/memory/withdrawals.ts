import { assertMove, fromStates, StateMoveRefusedError } from "../../domain/state-machine.ts";
import { PASSED_OVER, WITHDRAWAL_MACHINE, type WithdrawalEnd } from "../../domain/withdrawal-states.ts";
import type { Db, Tx } from "../db.ts";
import { WITHDRAWAL_GUARDS, type WithdrawalRow, type Withdrawals } from "../withdrawals.ts";
import { at, type State, type StoredWithdrawal } from "./state.ts";

/** How the memory store lets its side repositories run: in `tx`, or in a transaction of their own. */
export interface MemoryAccess {
  write<T>(tx: Db | undefined, fn: (s: State) => T): Promise<T>;
  read(): State;
  clock(): Date;
}

const keyOf = (operationId: string, provider: string) => `${operationId}\u0000${provider}`;

const toRow = (w: StoredWithdrawal): WithdrawalRow => ({
  operation_id: w.operation_id,
  provider: w.provider,
  attempts: w.attempts,
  passed_over: w.passed_over,
});

/**
 * `operations.withdrawals` in memory, the statements of `WithdrawalRepository` and
 * `insertPassedOver` (repository/withdrawals.ts) with the same guards, from the
 * withdrawal table (domain/withdrawal-states.ts): an earlier pass-over's row is asked
 * again, a cancel's is left alone; only a row still `asking` is rescheduled or ended, and
 * an end the table does not have is refused. Rows never change in place (the state is
 * copied per transaction).
 */
export class MemoryWithdrawals implements Withdrawals {
  readonly #m: MemoryAccess;

  constructor(access: MemoryAccess) {
    this.#m = access;
  }

  passedOver(tx: Tx, operationId: string, provider: string, leaseMs: number): Promise<void> {
    return this.#m.write(tx, (s) => {
      const now = this.#m.clock();
      const key = keyOf(operationId, provider);
      const found = s.withdrawals.get(key);
      if (found && !(found.passed_over && WITHDRAWAL_GUARDS.passedOverAgain.includes(found.status))) return;
      s.withdrawals.set(key, {
        operation_id: operationId,
        provider,
        passed_over: true,
        status: "asking",
        attempts: 0,
        last_error: null,
        next_attempt_at: at(now, leaseMs),
        updated_at: now,
      });
    });
  }

  lease(leaseMs: number, limit: number): Promise<WithdrawalRow[]> {
    return this.#m.write(undefined, (s) => {
      const now = this.#m.clock();
      const due = [...s.withdrawals.values()]
        .filter((w) => w.status === WITHDRAWAL_MACHINE.initial && w.next_attempt_at <= now)
        .sort((a, b) => a.next_attempt_at.getTime() - b.next_attempt_at.getTime())
        .slice(0, limit);
      for (const w of due)
        s.withdrawals.set(keyOf(w.operation_id, w.provider), { ...w, next_attempt_at: at(now, leaseMs) });
      return due.map(toRow);
    });
  }

  async asking(operationId: string, provider: string): Promise<WithdrawalRow | undefined> {
    const w = this.#m.read().withdrawals.get(keyOf(operationId, provider));
    return w?.status === WITHDRAWAL_MACHINE.initial ? toRow(w) : undefined;
  }

  async notToAskAgain(operationId: string): Promise<string[]> {
    return [...this.#m.read().withdrawals.values()]
      .filter(
        (w) =>
          w.operation_id === operationId && w.passed_over && (w.status === "asking" || w.status === "final"),
      )
      .map((w) => w.provider)
      .sort();
  }

  async retryLater(w: WithdrawalRow, attempts: number, reason: string, delayMs: number): Promise<void> {
    await this.#update(undefined, w, WITHDRAWAL_GUARDS.unanswered, (now) => ({
      attempts,
      last_error: reason,
      updated_at: now,
      next_attempt_at: at(now, delayMs),
    }));
  }

  end(w: WithdrawalRow, status: string, error: string | null, tx?: Db): Promise<boolean> {
    const scope = w.passed_over ? PASSED_OVER : undefined;
    const id = `${w.operation_id} at ${w.provider}`;
    if (!WITHDRAWAL_MACHINE.terminal.has(status as WithdrawalEnd))
      throw new StateMoveRefusedError(WITHDRAWAL_MACHINE.table, WITHDRAWAL_MACHINE.initial, status, id);
    assertMove(WITHDRAWAL_MACHINE, WITHDRAWAL_MACHINE.initial, status, scope, id);
    const from = fromStates(WITHDRAWAL_MACHINE, status as WithdrawalEnd, undefined, scope);
    return this.#update(tx, w, from, (now) => ({
      status: status as WithdrawalEnd,
      attempts: w.attempts + 1,
      last_error: error,
      updated_at: now,
    }));
  }

  /** Changes `w` if its status is one of `from`; whether it did. */
  #update(
    tx: Db | undefined,
    w: WithdrawalRow,
    from: readonly string[],
    change: (now: Date) => Partial<StoredWithdrawal>,
  ): Promise<boolean> {
    return this.#m.write(tx, (s) => {
      const key = keyOf(w.operation_id, w.provider);
      const found = s.withdrawals.get(key);
      if (!found || !from.includes(found.status)) return false;
      s.withdrawals.set(key, { ...found, ...change(this.#m.clock()) });
      return true;
    });
  }
}
