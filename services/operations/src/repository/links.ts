import { randomUUID } from "node:crypto";
import type { Sql } from "@gw/db";
import type { flexibleLinks } from "../db/schema.ts";
import { LINK_MACHINE, type LinkState } from "../domain/link-states.ts";
import type { SnakeKeys } from "../domain/model.ts";
import { assertMove, fromStates, StateMoveRefusedError } from "../domain/state-machine.ts";
import type { Db } from "./db.ts";

/**
 * An `operations.flexible_links` row, typed from the drizzle schema, its status narrowed
 * and `expires_at` a Date (the driver hands timestamps over as text; `hydrate` converts).
 */
export type LinkRow = Omit<
  SnakeKeys<typeof flexibleLinks.$inferSelect>,
  "status" | "expires_at" | "claimed_until" | "created_at" | "updated_at" | "slot_released_at"
> & {
  /** `deciding`: written, decision not taken yet (an attempt failed or is under way). */
  status: LinkState;
  expires_at: Date;
};

/** The columns a new link is written with (`deciding`, expiring `lifetimeMs` from now by the database's clock). */
export type NewLink = Omit<LinkRow, "status" | "expires_at" | "claim">;

/** The states a link is not decided in yet (`deciding`, `amount_selection`). */
export const UNDECIDED_LINK = LINK_MACHINE.states.filter((s) => !LINK_MACHINE.terminal.has(s));

/** Timestamps come back as text from the driver here: the row with a Date. */
const hydrate = (row: LinkRow | undefined): LinkRow | undefined =>
  row && { ...row, expires_at: new Date(row.expires_at) };

/**
 * `operations.flexible_links` as the flexible links use it (`LinkRepository` on Postgres,
 * `MemoryLinks` in memory; `test/contracts/links.contract.ts` checks both). "Now" is the
 * store's clock.
 */
export interface Links {
  find(id: string, tx?: Db): Promise<LinkRow | undefined>;
  /** Writes a link `deciding` unless its id or (shop, merchant_operation_id) is taken. */
  insert(link: NewLink, lifetimeMs: number): Promise<void>;
  /** Claims a link in `status` for `leaseMs` unless another claim runs; the row with its `claim` token, or undefined. */
  claim(id: string, status: LinkRow["status"], leaseMs: number): Promise<LinkRow | undefined>;
  /** Records the decision of the attempt holding `claim` and ends it; false when the claim lapsed (guarded by `LINK_MACHINE`). */
  decide(id: string, claim: string, status: LinkState, tx?: Db): Promise<boolean>;
  /** Undecided links nobody decides whose attempt may have left a pool slot no payment holds, soonest expiry first. */
  undecidedWithoutPayment(stuckMs: number, limit: number): Promise<LinkRow[]>;
  /** Ends the claim `claim`, recording that the link's slot was released under it. */
  slotReleased(id: string, claim: string): Promise<void>;
  /** Ends the claim `claim` without a decision. */
  release(id: string, claim: string): Promise<void>;
}

/** Every query of `operations.flexible_links` the flexible links run. */
export class LinkRepository implements Links {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async find(id: string, tx: Db = this.#sql): Promise<LinkRow | undefined> {
    const [row] = await tx<LinkRow[]>`select * from operations.flexible_links where operation_id = ${id}`;
    return hydrate(row);
  }

  /** Writes a link `deciding` unless its id or (shop, merchant_operation_id) is taken. */
  async insert(link: NewLink, lifetimeMs: number): Promise<void> {
    await this.#sql`
      insert into operations.flexible_links (operation_id, shop_id, merchant_id, merchant_operation_id,
        request_hash, client_id, client_ip, method, currency, recommended_amount, min_amount, max_amount,
        picker, k_hash, status, expires_at)
      values (${link.operation_id}, ${link.shop_id}, ${link.merchant_id}, ${link.merchant_operation_id},
        ${link.request_hash}, ${link.client_id}, ${link.client_ip}, ${link.method}, ${link.currency},
        ${link.recommended_amount}, ${link.min_amount}, ${link.max_amount}, ${link.picker},
        ${link.k_hash}, ${LINK_MACHINE.initial}, now() + ${`${lifetimeMs} milliseconds`}::interval)
      on conflict do nothing`;
  }

  /**
   * Claims a link in `status` for one attempt for `leaseMs` (by the database's clock),
   * unless another attempt's claim is running: one committed statement, no lock held
   * after it. Returns the row with its `claim` token, or undefined.
   */
  async claim(id: string, status: LinkRow["status"], leaseMs: number): Promise<LinkRow | undefined> {
    const [row] = await this.#sql<LinkRow[]>`
      update operations.flexible_links
      set claim = ${randomUUID()}, claimed_until = now() + ${`${leaseMs} milliseconds`}::interval,
        slot_released_at = null
      where operation_id = ${id} and status = ${status}
        and (claimed_until is null or claimed_until <= now())
      returning *`;
    return hydrate(row);
  }

  /**
   * Records the decision of the attempt holding `claim` and ends its claim; false when
   * its claim lapsed and another attempt took the link (in `tx` when given). The move is
   * guarded by the link table (`LINK_MACHINE`): a link this claim holds in a state that
   * cannot move to `status` is a `StateMoveRefusedError`.
   */
  async decide(id: string, claim: string, status: LinkState, tx: Db = this.#sql): Promise<boolean> {
    const from = fromStates(LINK_MACHINE, status);
    if (from.length === 0) throw new StateMoveRefusedError(LINK_MACHINE.table, "any state", status, id);
    const rows = await tx`
      update operations.flexible_links
      set status = ${status}, claim = null, claimed_until = null, updated_at = now()
      where operation_id = ${id} and claim = ${claim} and status = any(${from})
      returning 1`;
    if (rows.length === 1) return true;
    const [held] = await tx<{ status: string }[]>`
      select status from operations.flexible_links where operation_id = ${id} and claim = ${claim}`;
    if (held) assertMove(LINK_MACHINE, held.status, status, undefined, id);
    return false;
  }

  /**
   * Undecided links nobody decides now whose attempt may have left a pool slot that no
   * payment holds: `amount_selection` or `deciding` past `expires_at`, or `deciding` for
   * `stuckMs` (the attempt failed and no retry came), with no payment row or one that
   * ended outside the pool, slot not released since the last claim.
   */
  async undecidedWithoutPayment(stuckMs: number, limit: number): Promise<LinkRow[]> {
    const rows = await this.#sql<LinkRow[]>`
      select * from operations.flexible_links l
      where l.status = any(${UNDECIDED_LINK}) and l.slot_released_at is null
        and (l.claimed_until is null or l.claimed_until <= now())
        and (l.expires_at <= now()
          or (l.status = 'deciding' and l.created_at <= now() - ${`${stuckMs} milliseconds`}::interval))
        and not exists (select 1 from operations.operations o where o.id = l.operation_id
          and not (o.status in ('rejected', 'cancelled') and o.provider is distinct from 'self_matching'))
      order by l.expires_at
      limit ${limit}`;
    return rows.map((r) => hydrate(r) as LinkRow);
  }

  /** Ends the claim `claim`, recording that the link's slot was released under it. */
  async slotReleased(id: string, claim: string): Promise<void> {
    await this.#sql`
      update operations.flexible_links set claim = null, claimed_until = null, slot_released_at = now()
      where operation_id = ${id} and claim = ${claim}`;
  }

  /** Ends the claim `claim` without a decision (the attempt failed, or left the choice open). */
  async release(id: string, claim: string): Promise<void> {
    await this.#sql`
      update operations.flexible_links set claim = null, claimed_until = null
      where operation_id = ${id} and claim = ${claim}`;
  }
}
