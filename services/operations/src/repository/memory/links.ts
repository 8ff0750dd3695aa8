import { randomUUID } from "node:crypto";
import { Decimal } from "@gw/money";
import { LINK_MACHINE, type LinkState } from "../../domain/link-states.ts";
import { assertMove, fromStates, StateMoveRefusedError } from "../../domain/state-machine.ts";
import type { Db } from "../db.ts";
import { type LinkRow, type Links, type NewLink, UNDECIDED_LINK } from "../links.ts";
import { at, type State, type StoredLink } from "./state.ts";
import type { MemoryAccess } from "./withdrawals.ts";

/** `numeric(20, 2)` as Postgres answers it. */
const money = (v: string | null) => (v === null ? null : new Decimal(v).toFixed(2));

/** A row as `LinkRepository` types it: without the claim's bookkeeping. */
const toRow = (l: StoredLink): LinkRow => {
  const { claimed_until: _c, slot_released_at: _s, created_at: _cr, updated_at: _u, ...row } = l;
  return { ...row, expires_at: new Date(l.expires_at) };
};

/** A payment row that holds the pool slot of its link: any but one ended outside the pool. */
const holdsSlot = (s: State, id: string) => {
  const o = s.rows.get(id);
  return (
    o !== undefined &&
    !((o.status === "rejected" || o.status === "cancelled") && o.provider !== "self_matching")
  );
};

/**
 * `operations.flexible_links` in memory, the statements of `LinkRepository`
 * (repository/links.ts) with the same guards: a claim is taken only from a link in the
 * asked status whose claim is not running (by the store's clock), a decision is recorded
 * only by the claim's holder and only along the link table (`LINK_MACHINE`). The keys the
 * links hold (`State.links`, read by the core's claim) follow every write.
 */
export class MemoryLinks implements Links {
  readonly #m: MemoryAccess;

  constructor(access: MemoryAccess) {
    this.#m = access;
  }

  async find(id: string, tx?: Db): Promise<LinkRow | undefined> {
    const l = (tx === undefined ? this.#m.read() : await this.#m.write(tx, (s) => s)).flexibleLinks.get(id);
    return l && toRow(l);
  }

  insert(link: NewLink, lifetimeMs: number): Promise<void> {
    return this.#m.write(undefined, (s) => {
      const taken = [...s.flexibleLinks.values()].some(
        (l) =>
          l.operation_id === link.operation_id ||
          (l.shop_id === link.shop_id && l.merchant_operation_id === link.merchant_operation_id),
      );
      if (taken) return;
      const now = this.#m.clock();
      const stored: StoredLink = {
        ...link,
        recommended_amount: money(link.recommended_amount) as string,
        min_amount: money(link.min_amount),
        max_amount: money(link.max_amount),
        status: LINK_MACHINE.initial,
        expires_at: at(now, lifetimeMs),
        claim: null,
        claimed_until: null,
        slot_released_at: null,
        created_at: now,
        updated_at: now,
      };
      this.#put(s, stored);
    });
  }

  claim(id: string, status: LinkRow["status"], leaseMs: number): Promise<LinkRow | undefined> {
    return this.#m.write(undefined, (s) => {
      const now = this.#m.clock();
      const l = s.flexibleLinks.get(id);
      if (!l || l.status !== status || (l.claimed_until !== null && l.claimed_until > now)) return undefined;
      const claimed = { ...l, claim: randomUUID(), claimed_until: at(now, leaseMs), slot_released_at: null };
      this.#put(s, claimed);
      return toRow(claimed);
    });
  }

  async decide(id: string, claim: string, status: LinkState, tx?: Db): Promise<boolean> {
    const from = fromStates(LINK_MACHINE, status);
    if (from.length === 0) throw new StateMoveRefusedError(LINK_MACHINE.table, "any state", status, id);
    return this.#m.write(tx, (s) => {
      const l = s.flexibleLinks.get(id);
      if (!l || l.claim !== claim) return false;
      if (!from.includes(l.status)) {
        assertMove(LINK_MACHINE, l.status, status, undefined, id);
        return false;
      }
      this.#put(s, { ...l, status, claim: null, claimed_until: null, updated_at: this.#m.clock() });
      return true;
    });
  }

  async undecidedWithoutPayment(stuckMs: number, limit: number): Promise<LinkRow[]> {
    const s = this.#m.read();
    const now = this.#m.clock();
    return [...s.flexibleLinks.values()]
      .filter(
        (l) =>
          UNDECIDED_LINK.includes(l.status) &&
          l.slot_released_at === null &&
          (l.claimed_until === null || l.claimed_until <= now) &&
          (l.expires_at <= now || (l.status === "deciding" && l.created_at <= at(now, -stuckMs))) &&
          !holdsSlot(s, l.operation_id),
      )
      .sort((a, b) => a.expires_at.getTime() - b.expires_at.getTime())
      .slice(0, limit)
      .map(toRow);
  }

  slotReleased(id: string, claim: string): Promise<void> {
    return this.#end(id, claim, (now) => ({ slot_released_at: now }));
  }

  release(id: string, claim: string): Promise<void> {
    return this.#end(id, claim, () => ({}));
  }

  /** Ends the claim `claim` of link `id`, if it holds it, with `change`. */
  #end(id: string, claim: string, change: (now: Date) => Partial<StoredLink>): Promise<void> {
    return this.#m.write(undefined, (s) => {
      const l = s.flexibleLinks.get(id);
      if (l?.claim === claim)
        this.#put(s, { ...l, claim: null, claimed_until: null, ...change(this.#m.clock()) });
    });
  }

  /** Writes `l` and the key it holds. */
  #put(s: State, l: StoredLink): void {
    s.flexibleLinks.set(l.operation_id, l);
    s.links.set(l.operation_id, {
      operationId: l.operation_id,
      shopId: l.shop_id,
      merchantOperationId: l.merchant_operation_id,
      kHash: l.k_hash,
      status: l.status,
    });
  }
}
