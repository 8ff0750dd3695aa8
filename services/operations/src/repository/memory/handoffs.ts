import { Decimal } from "@gw/money";
import { HANDOFF_MACHINE, type HandOffState } from "../../domain/handoff-states.ts";
import type { Tx } from "../db.ts";
import { HANDOFF_CHANNEL, HANDOFF_GUARDS, type HandOffRow, type HandOffs } from "../handoffs.ts";
import { at, type State, type StoredHandOff } from "./state.ts";
import type { MemoryAccess } from "./withdrawals.ts";

/** What the hand-offs need of the memory store besides its state and clock: its listeners. */
export interface MemoryHandOffAccess extends MemoryAccess {
  /** Calls the listeners of `channel` (as a NOTIFY would). */
  notify(channel: string): void;
}

const toRow = (h: StoredHandOff): HandOffRow => ({
  operation_id: h.operation_id,
  amount: h.amount,
  candidates: [...h.candidates],
  position: h.position,
  attempts: h.attempts,
});

/**
 * `operations.pool_handoffs` in memory, the statements of `HandOffRepository` and
 * `insertHandOff` (repository/handoffs.ts) with the same guards, from the hand-off table
 * (`HANDOFF_GUARDS`, domain/handoff-states.ts): a hand-off is recorded once, `asking`;
 * every later write changes it only while its status is one the move starts from and its
 * `position` is the one the driver read. Leases and delays run by the store's clock. A
 * recorded hand-off wakes the channel's listeners at once rather than at the commit
 * (a rolled-back one wakes them for nothing). Rows never change in place.
 */
export class MemoryHandOffs implements HandOffs {
  readonly #m: MemoryHandOffAccess;

  constructor(access: MemoryHandOffAccess) {
    this.#m = access;
  }

  async record(tx: Tx, operationId: string, amount: string, candidates: string[]): Promise<void> {
    await this.#m.write(tx, (s) => {
      if (s.handoffs.has(operationId)) return;
      const now = this.#m.clock();
      s.handoffs.set(operationId, {
        operation_id: operationId,
        amount: new Decimal(amount).toFixed(2),
        candidates: [...candidates],
        position: 0,
        attempts: 0,
        status: HANDOFF_MACHINE.initial,
        provider: null,
        next_attempt_at: now,
        created_at: now,
        updated_at: now,
      });
    });
    this.#m.notify(HANDOFF_CHANNEL);
  }

  lease(leaseMs: number, limit: number): Promise<HandOffRow[]> {
    return this.#m.write(undefined, (s) => {
      const now = this.#m.clock();
      const due = [...s.handoffs.values()]
        .filter((h) => h.status === HANDOFF_MACHINE.initial && h.next_attempt_at <= now)
        .sort((a, b) => a.next_attempt_at.getTime() - b.next_attempt_at.getTime())
        .slice(0, limit);
      for (const h of due) s.handoffs.set(h.operation_id, { ...h, next_attempt_at: at(now, leaseMs) });
      return due.map(toRow);
    });
  }

  async supersede(operationId: string): Promise<void> {
    await this.#m.write(undefined, (s) => {
      const found = s.handoffs.get(operationId);
      if (!found || !HANDOFF_GUARDS.settled_elsewhere.includes(found.status)) return;
      s.handoffs.set(operationId, { ...found, status: "superseded", updated_at: this.#m.clock() });
    });
  }

  async retryLater(h: HandOffRow, attempts: number, delayMs: number): Promise<void> {
    await this.#update(undefined, h, HANDOFF_GUARDS.unanswered, (now) => ({
      attempts,
      updated_at: now,
      next_attempt_at: at(now, delayMs),
    }));
  }

  accept(tx: Tx, h: HandOffRow, provider: string): Promise<boolean> {
    return this.#update(tx, h, HANDOFF_GUARDS.accepted, (now) => ({
      status: "accepted",
      provider,
      updated_at: now,
    }));
  }

  async advance(h: HandOffRow): Promise<void> {
    await this.#update(undefined, h, HANDOFF_GUARDS.passed_over, (now) => ({
      position: h.position + 1,
      attempts: 0,
      next_attempt_at: now,
      updated_at: now,
    }));
  }

  exhaust(tx: Tx, h: HandOffRow): Promise<boolean> {
    return this.#update(tx, h, HANDOFF_GUARDS.exhausted, (now) => ({ status: "exhausted", updated_at: now }));
  }

  /** Changes `h` if its status is one of `from` and its position the one read; whether it did. */
  #update(
    tx: Tx | undefined,
    h: HandOffRow,
    from: readonly HandOffState[],
    change: (now: Date) => Partial<StoredHandOff>,
  ): Promise<boolean> {
    return this.#m.write(tx, (s: State) => {
      const found = s.handoffs.get(h.operation_id);
      if (!found || !from.includes(found.status) || found.position !== h.position) return false;
      s.handoffs.set(h.operation_id, { ...found, ...change(this.#m.clock()) });
      return true;
    });
  }
}
