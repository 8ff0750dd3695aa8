import type { Db, Tx } from "../db.ts";
import type { WithdrawalRow, Withdrawals } from "../withdrawals.ts";
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
 * `insertPassedOver` (repository/withdrawals.ts) with their guards: an earlier
 * pass-over's row is asked again, a cancel's is left alone; only a row still `asking`
 * is rescheduled or ended. Rows never change in place (the state is copied per
 * transaction). The statuses are the SQL's (no transition table of their own yet).
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
      if (found && !found.passed_over) return;
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
        .filter((w) => w.status === "asking" && w.next_attempt_at <= now)
        .sort((a, b) => a.next_attempt_at.getTime() - b.next_attempt_at.getTime())
        .slice(0, limit);
      for (const w of due)
        s.withdrawals.set(keyOf(w.operation_id, w.provider), { ...w, next_attempt_at: at(now, leaseMs) });
      return due.map(toRow);
    });
  }

  async asking(operationId: string, provider: string): Promise<WithdrawalRow | undefined> {
    const w = this.#m.read().withdrawals.get(keyOf(operationId, provider));
    return w?.status === "asking" ? toRow(w) : undefined;
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

  retryLater(w: WithdrawalRow, attempts: number, reason: string, delayMs: number): Promise<void> {
    return this.#update(undefined, w, (now) => ({
      attempts,
      last_error: reason,
      updated_at: now,
      next_attempt_at: at(now, delayMs),
    }));
  }

  end(w: WithdrawalRow, status: string, error: string | null, tx?: Db): Promise<void> {
    return this.#update(tx, w, (now) => ({
      status,
      attempts: w.attempts + 1,
      last_error: error,
      updated_at: now,
    }));
  }

  /** Changes `w` if it is still asking. */
  #update(tx: Db | undefined, w: WithdrawalRow, change: (now: Date) => Partial<StoredWithdrawal>) {
    return this.#m.write(tx, (s) => {
      const key = keyOf(w.operation_id, w.provider);
      const found = s.withdrawals.get(key);
      if (found?.status === "asking") s.withdrawals.set(key, { ...found, ...change(this.#m.clock()) });
    });
  }
}
