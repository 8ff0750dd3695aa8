import type { OperatorQueue, OperatorQueueRow, QueuedPayout } from "../operator-queue.ts";
import { at } from "./state.ts";
import type { MemoryAccess } from "./withdrawals.ts";

/** Payouts in the queue still unresolved. */
const awaiting = (r: { operator_queued_at: Date | null; status: string }) =>
  r.operator_queued_at !== null && r.status === "routing";

/**
 * The operator queue in memory, as `OperatorQueueRepository`: `operator_queued_at` on the
 * memory store's rows, set once and never a change of state (no version, no event); the
 * listing computed from the rows and their withdrawals, as the SQL shapes it.
 */
export class MemoryOperatorQueue implements OperatorQueue {
  readonly #m: MemoryAccess;

  constructor(access: MemoryAccess) {
    this.#m = access;
  }

  queueUnresolvedPayout(id: string, horizonMs: number): Promise<QueuedPayout | undefined> {
    return this.#m.write(undefined, (s) => {
      const now = this.#m.clock();
      const r = s.rows.get(id);
      if (
        r?.type !== "payout" ||
        r.status !== "routing" ||
        r.operator_queued_at !== null ||
        r.created_at > at(now, -horizonMs)
      )
        return undefined;
      s.rows.set(id, { ...r, operator_queued_at: now });
      return {
        id: r.id,
        shop_id: r.shop_id,
        routing_unresolved: r.routing_unresolved,
        created_at: r.created_at,
      };
    });
  }

  async listAwaiting(limit: number): Promise<OperatorQueueRow[]> {
    const s = this.#m.read();
    const iso = (d: Date) => d.toISOString();
    return [...s.rows.values()]
      .filter(awaiting)
      .sort(
        (a, b) =>
          (a.operator_queued_at as Date).getTime() - (b.operator_queued_at as Date).getTime() ||
          (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
      )
      .slice(0, limit)
      .map((o) => {
        const withdrawals = [...s.withdrawals.values()]
          .filter((w) => w.operation_id === o.id)
          .sort((a, b) => (a.provider < b.provider ? -1 : a.provider > b.provider ? 1 : 0))
          .map((w) => ({
            provider: w.provider,
            status: w.status,
            attempts: w.attempts,
            last_error: w.last_error,
            updated_at: iso(w.updated_at),
          }));
        return {
          id: o.id,
          shop_id: o.shop_id,
          merchant_operation_id: o.merchant_operation_id,
          amount: o.expected_amount,
          currency: o.currency,
          created_at: iso(o.created_at),
          operator_queued_at: iso(o.operator_queued_at as Date),
          routing_unresolved: o.routing_unresolved,
          routing_passed: [...o.routing_passed],
          reconcile_checks: o.reconcile_checks,
          next_check_at: o.next_check_at && iso(o.next_check_at),
          withdrawals: withdrawals.length === 0 ? null : withdrawals,
        };
      });
  }

  async countAwaiting(): Promise<number> {
    return [...this.#m.read().rows.values()].filter(awaiting).length;
  }
}
