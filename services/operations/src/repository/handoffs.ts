import type { Sql } from "@gw/db";
import type { poolHandoffs } from "../db/schema.ts";
import { HANDOFF_MACHINE, type HandOffEvent, type HandOffState } from "../domain/handoff-states.ts";
import { fromStates } from "../domain/state-machine.ts";
import type { Tx } from "./db.ts";

/** The Postgres channel notified when a hand-off becomes due. */
export const HANDOFF_CHANNEL = "operations_pool_handoffs";

type Row = typeof poolHandoffs.$inferSelect;

/**
 * The guard of each write, from the hand-off table (`HANDOFF_MACHINE`): the states the
 * move it records may start from. A write whose guard matches no row records nothing
 * (another driver recorded an answer first, or the hand-off ended meanwhile).
 */
export const HANDOFF_GUARDS: Readonly<Record<HandOffEvent, readonly HandOffState[]>> = {
  unanswered: fromStates(HANDOFF_MACHINE, "asking", "unanswered"),
  passed_over: fromStates(HANDOFF_MACHINE, "asking", "passed_over"),
  accepted: fromStates(HANDOFF_MACHINE, "accepted", "accepted"),
  exhausted: fromStates(HANDOFF_MACHINE, "exhausted", "exhausted"),
  settled_elsewhere: fromStates(HANDOFF_MACHINE, "superseded", "settled_elsewhere"),
};
/** The columns of an `operations.pool_handoffs` row a driver works with (the amount as text). */
export type HandOffRow = {
  operation_id: Row["operationId"];
  amount: string;
  candidates: Row["candidates"];
  position: Row["position"];
  attempts: Row["attempts"];
};

/** Records the decision in the consumer's transaction; the driver is woken at its commit. */
export async function insertHandOff(
  tx: Tx,
  operationId: string,
  amount: string,
  candidates: string[],
): Promise<void> {
  await tx`
    insert into operations.pool_handoffs (operation_id, amount, candidates, status)
    values (${operationId}, ${amount}, ${candidates}, ${HANDOFF_MACHINE.initial}) on conflict do nothing`;
  await tx`select pg_notify(${HANDOFF_CHANNEL}, '')`;
}

/**
 * `operations.pool_handoffs` as the pool's consumer and the hand-off driver use it: what
 * `HandOffRepository` runs on Postgres and `MemoryHandOffs` keeps in memory. Each write
 * after the first is conditional on the state the driver read (see `HANDOFF_GUARDS`).
 */
export interface HandOffs {
  /** `insertHandOff` in the consumer's transaction `tx` (a memory store's own, there): once per operation. */
  record(tx: Tx, operationId: string, amount: string, candidates: string[]): Promise<void>;
  /** Leases up to `limit` due hand-offs (asking, `next_attempt_at` passed), pushing them `leaseMs` ahead. */
  lease(leaseMs: number, limit: number): Promise<HandOffRow[]>;
  /** Settled meanwhile by another path: nothing to hand off any more. */
  supersede(operationId: string): Promise<void>;
  /** Counts an unanswered ask of the candidate at `h.position`; asked again `delayMs` ahead. */
  retryLater(h: HandOffRow, attempts: number, delayMs: number): Promise<void>;
  /** The candidate at `h.position` took it; false when another driver recorded an answer first. */
  accept(tx: Tx, h: HandOffRow, provider: string): Promise<boolean>;
  /** The next candidate is asked at once. */
  advance(h: HandOffRow): Promise<void>;
  /** No candidate left; false when another driver recorded an answer first. */
  exhaust(tx: Tx, h: HandOffRow): Promise<boolean>;
}

/**
 * Every query of `operations.pool_handoffs` the driver runs. Each write is conditional
 * on the state the driver read (still `asking`, same `position`), so an answer is never
 * recorded twice.
 */
export class HandOffRepository implements HandOffs {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  record(tx: Tx, operationId: string, amount: string, candidates: string[]): Promise<void> {
    return insertHandOff(tx, operationId, amount, candidates);
  }

  /**
   * Leases up to `limit` due hand-offs, pushing them `leaseMs` ahead (`for update skip
   * locked`). `'asking'` is a literal here, as the partial index `pool_handoffs_due` has it,
   * so that every plan (a generic one too) can use that index.
   */
  lease(leaseMs: number, limit: number): Promise<HandOffRow[]> {
    return this.#sql<HandOffRow[]>`
      update operations.pool_handoffs h
      set next_attempt_at = now() + make_interval(secs => ${leaseMs}::double precision / 1000)
      from (
        select operation_id from operations.pool_handoffs
        where status = 'asking' and next_attempt_at <= now()
        order by next_attempt_at limit ${limit}
        for update skip locked
      ) d
      where h.operation_id = d.operation_id
      returning h.operation_id, h.amount::text as amount, h.candidates, h.position, h.attempts`;
  }

  /** Settled meanwhile by another path: nothing to hand off any more. */
  async supersede(operationId: string): Promise<void> {
    await this.#sql`
      update operations.pool_handoffs set status = ${"superseded" satisfies HandOffState}, updated_at = now()
      where operation_id = ${operationId} and status = any(${HANDOFF_GUARDS.settled_elsewhere})`;
  }

  /** Counts an unanswered ask of the candidate at `h.position`; asked again `delayMs` ahead. */
  async retryLater(h: HandOffRow, attempts: number, delayMs: number): Promise<void> {
    await this.#sql`
      update operations.pool_handoffs
      set attempts = ${attempts}, updated_at = now(),
        next_attempt_at = now() + make_interval(secs => ${delayMs}::double precision / 1000)
      where operation_id = ${h.operation_id} and status = any(${HANDOFF_GUARDS.unanswered})
        and position = ${h.position}`;
  }

  /** The candidate at `h.position` took it; false when another driver recorded an answer first. */
  async accept(tx: Tx, h: HandOffRow, provider: string): Promise<boolean> {
    const taken = await tx`
      update operations.pool_handoffs
      set status = ${"accepted" satisfies HandOffState}, provider = ${provider}, updated_at = now()
      where operation_id = ${h.operation_id} and status = any(${HANDOFF_GUARDS.accepted})
        and position = ${h.position}
      returning 1`;
    return taken.length > 0;
  }

  /** The next candidate is asked at once. */
  async advance(h: HandOffRow): Promise<void> {
    await this.#sql`
      update operations.pool_handoffs
      set position = ${h.position + 1}, attempts = 0, next_attempt_at = now(), updated_at = now()
      where operation_id = ${h.operation_id} and status = any(${HANDOFF_GUARDS.passed_over})
        and position = ${h.position}`;
  }

  /** No candidate left; false when another driver recorded an answer first. */
  async exhaust(tx: Tx, h: HandOffRow): Promise<boolean> {
    const ended = await tx`
      update operations.pool_handoffs set status = ${"exhausted" satisfies HandOffState}, updated_at = now()
      where operation_id = ${h.operation_id} and status = any(${HANDOFF_GUARDS.exhausted})
        and position = ${h.position}
      returning 1`;
    return ended.length > 0;
  }
}
