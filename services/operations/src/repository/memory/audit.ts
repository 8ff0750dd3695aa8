import { Decimal } from "@gw/money";
import type { Audit, AuditRow } from "../audit.ts";
import type { MemoryAccess } from "./withdrawals.ts";

/** The admin audit reads in memory, as `AuditRepository`, computed from the memory store's rows and legs. */
export class MemoryAudit implements Audit {
  readonly #m: MemoryAccess;

  constructor(access: MemoryAccess) {
    this.#m = access;
  }

  async operations(cursor: string, limit: number): Promise<AuditRow[]> {
    const s = this.#m.read();
    return [...s.rows.values()]
      .filter((o) => cursor === "" || o.id > cursor.toLowerCase())
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, limit)
      .map((o) => {
        const perProvider = new Map<string, { amount: Decimal; count: number }>();
        for (const leg of s.legs.get(o.id) ?? []) {
          const p = perProvider.get(leg.provider) ?? { amount: new Decimal(0), count: 0 };
          perProvider.set(leg.provider, { amount: p.amount.plus(leg.amount), count: p.count + 1 });
        }
        const legs = [...perProvider.entries()]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([provider, p]) => ({ provider, amount: p.amount.toFixed(2), count: p.count }));
        return {
          id: o.id,
          shop_id: o.shop_id,
          type: o.type,
          status: o.status,
          provider: o.provider,
          amount: o.expected_amount,
          actual_amount: o.actual_amount,
          currency: o.currency,
          placeholder: o.request_hash === null,
          legs: legs.length === 0 ? null : legs,
          created_at: o.created_at,
          updated_at: o.updated_at,
        };
      });
  }
}
