import type { Sql } from "@gw/db";
import type { withdrawals } from "../db/schema.ts";
import { assertMove, fromStates, StateMoveRefusedError } from "../domain/state-machine.ts";
import {
  PASSED_OVER,
  WITHDRAWAL_MACHINE,
  type WithdrawalEnd,
  type WithdrawalState,
} from "../domain/withdrawal-states.ts";
import type { Db, Tx } from "./db.ts";

/** The Postgres channel notified when a withdrawal becomes due. */
export const WITHDRAWALS_CHANNEL = "operations_withdrawals";

/** The columns of an `operations.withdrawals` row a driver works with. */
export type WithdrawalRow = {
  operation_id: (typeof withdrawals.$inferSelect)["operationId"];
  provider: (typeof withdrawals.$inferSelect)["provider"];
  attempts: (typeof withdrawals.$inferSelect)["attempts"];
  passed_over: (typeof withdrawals.$inferSelect)["passedOver"];
};

/**
 * The guard of each write, from the withdrawal table (`WITHDRAWAL_MACHINE`): the states
 * the move it records may start from. A passed-over row is asked again from any state; an
 * ask ends only while asking. A write whose guard matches no row records nothing, as
 * before: the ask was ended meanwhile (`askNow` and the driver raced), and ending it
 * again would change nothing.
 */
export const WITHDRAWAL_GUARDS = {
  passedOverAgain: fromStates(WITHDRAWAL_MACHINE, "asking", "passed_over_again", PASSED_OVER),
  cancelled: fromStates(WITHDRAWAL_MACHINE, "asking", "cancelled", PASSED_OVER),
  unanswered: fromStates(WITHDRAWAL_MACHINE, "asking", "unanswered"),
} as const;
/** The state a withdrawal is asked in. */
const ASKING: WithdrawalState = "asking";
/** What a retried create must not ask again: still asking, or decided there. */
const NOT_TO_ASK_AGAIN: readonly WithdrawalState[] = ["asking", "final"];

/** The provider an operation was routed to (null before one was), in the consumer's transaction. */
export async function providerOfOperation(tx: Tx, operationId: string): Promise<string | null | undefined> {
  const [row] = await tx<{ provider: string | null }[]>`
    select provider from operations.operations where id = ${operationId}`;
  return row?.provider;
}

/**
 * Records the withdrawal of a cancelled payment, in the consumer's transaction; its driver
 * is woken at the commit. A withdrawal the create recorded at this provider (passed over,
 * then accepted by a retry) becomes the cancel's: asked again from the start.
 */
export async function insertWithdrawal(tx: Tx, operationId: string, provider: string): Promise<void> {
  await tx`
    insert into operations.withdrawals (operation_id, provider, status)
    values (${operationId}, ${provider}, ${WITHDRAWAL_MACHINE.initial})
    on conflict (operation_id, provider) do update
    set passed_over = false, status = ${ASKING}, attempts = 0, last_error = null,
      next_attempt_at = now(), updated_at = now()
    where operations.withdrawals.passed_over
      and operations.withdrawals.status = any(${WITHDRAWAL_GUARDS.cancelled})`;
  await tx`select pg_notify(${WITHDRAWALS_CHANNEL}, '')`;
}

/**
 * Records, in the create's transaction `tx` that passes `provider` over, the withdrawal of
 * a payin whose create answer was unknown there, not due before `leaseMs` (the caller asks
 * it at once). A row of an earlier pass-over is asked again.
 */
export async function insertPassedOver(
  tx: Tx,
  operationId: string,
  provider: string,
  leaseMs: number,
): Promise<void> {
  await tx`
    insert into operations.withdrawals (operation_id, provider, passed_over, status, next_attempt_at)
    values (${operationId}, ${provider}, true, ${WITHDRAWAL_MACHINE.initial},
      now() + make_interval(secs => ${leaseMs}::double precision / 1000))
    on conflict (operation_id, provider) do update
    set status = ${ASKING}, attempts = 0, last_error = null,
      next_attempt_at = excluded.next_attempt_at, updated_at = now()
    where operations.withdrawals.passed_over
      and operations.withdrawals.status = any(${WITHDRAWAL_GUARDS.passedOverAgain})`;
}

/**
 * `operations.withdrawals` as a create and the withdrawal driver use it: what
 * `WithdrawalRepository` runs on Postgres and `MemoryWithdrawals` keeps in memory.
 */
export interface Withdrawals {
  /** `insertPassedOver` in the create's transaction `tx` (a memory store's own, there). */
  passedOver(tx: Tx, operationId: string, provider: string, leaseMs: number): Promise<void>;
  /** Leases up to `limit` due withdrawals, pushing them `leaseMs` ahead. */
  lease(leaseMs: number, limit: number): Promise<WithdrawalRow[]>;
  /** The withdrawal of `operationId` at `provider` if it is still asking. */
  asking(operationId: string, provider: string): Promise<WithdrawalRow | undefined>;
  /** The providers of `operationId` a retried create must not ask again (see `WithdrawalRepository`). */
  notToAskAgain(operationId: string): Promise<string[]>;
  /** Counts an unanswered ask and schedules the next one `delayMs` ahead, if still asking. */
  retryLater(w: WithdrawalRow, attempts: number, reason: string, delayMs: number): Promise<void>;
  /** Ends a withdrawal still asking with `status`, counting the ask; false when it was not asking. */
  end(w: WithdrawalRow, status: string, error: string | null, tx?: Db): Promise<boolean>;
}

/** Every query of `operations.withdrawals` the driver runs. */
export class WithdrawalRepository implements Withdrawals {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  passedOver(tx: Tx, operationId: string, provider: string, leaseMs: number): Promise<void> {
    return insertPassedOver(tx, operationId, provider, leaseMs);
  }

  /**
   * Leases up to `limit` due withdrawals, pushing them `leaseMs` ahead (`for update skip
   * locked`). `'asking'` is a literal here, as the partial index `withdrawals_due` has it,
   * so that every plan (a generic one too) can use that index.
   */
  lease(leaseMs: number, limit: number): Promise<WithdrawalRow[]> {
    return this.#sql<WithdrawalRow[]>`
      update operations.withdrawals w
      set next_attempt_at = now() + make_interval(secs => ${leaseMs}::double precision / 1000)
      from (
        select operation_id, provider from operations.withdrawals
        where status = 'asking' and next_attempt_at <= now()
        order by next_attempt_at limit ${limit}
        for update skip locked
      ) d
      where w.operation_id = d.operation_id and w.provider = d.provider
      returning w.operation_id, w.provider, w.attempts, w.passed_over`;
  }

  /** The withdrawal of `operationId` at `provider` if it is still asking. */
  async asking(operationId: string, provider: string): Promise<WithdrawalRow | undefined> {
    const [w] = await this.#sql<WithdrawalRow[]>`
      select operation_id, provider, attempts, passed_over from operations.withdrawals
      where operation_id = ${operationId} and provider = ${provider} and status = ${ASKING}`;
    return w;
  }

  /**
   * The providers of `operationId` a retried create must not ask again: a passed-over
   * withdrawal there still asking (its withdraw could reach the retried create the
   * provider accepts), or one that ended `final` (the provider decided that operation:
   * its completion is a provider fact already, which routing there again would book twice).
   */
  async notToAskAgain(operationId: string): Promise<string[]> {
    const rows = await this.#sql<{ provider: string }[]>`
      select provider from operations.withdrawals
      where operation_id = ${operationId} and passed_over and status = any(${NOT_TO_ASK_AGAIN})
      order by provider`;
    return rows.map((r) => r.provider);
  }

  /** Counts an unanswered ask and schedules the next one `delayMs` ahead, if still asking. */
  async retryLater(w: WithdrawalRow, attempts: number, reason: string, delayMs: number): Promise<void> {
    await this.#sql`
      update operations.withdrawals
      set attempts = ${attempts}, last_error = ${reason}, updated_at = now(),
        next_attempt_at = now() + make_interval(secs => ${delayMs}::double precision / 1000)
      where operation_id = ${w.operation_id} and provider = ${w.provider}
        and status = any(${WITHDRAWAL_GUARDS.unanswered})`;
  }

  /**
   * Ends a withdrawal still asking with `status`, counting the ask (in `tx` when given);
   * false when it was not asking any more (see `WITHDRAWAL_GUARDS`). `status` must be a
   * `WithdrawalEnd` the table has for the row (`held` only for a passed-over one): anything
   * else is a `StateMoveRefusedError`.
   */
  async end(w: WithdrawalRow, status: string, error: string | null, tx: Db = this.#sql): Promise<boolean> {
    const scope = w.passed_over ? PASSED_OVER : undefined;
    const id = `${w.operation_id} at ${w.provider}`;
    if (!WITHDRAWAL_MACHINE.terminal.has(status as WithdrawalEnd))
      throw new StateMoveRefusedError(WITHDRAWAL_MACHINE.table, ASKING, status, id);
    assertMove(WITHDRAWAL_MACHINE, ASKING, status, scope, id);
    const ended = await tx`
      update operations.withdrawals
      set status = ${status}, attempts = ${w.attempts + 1}, last_error = ${error}, updated_at = now()
      where operation_id = ${w.operation_id} and provider = ${w.provider}
        and status = any(${fromStates(WITHDRAWAL_MACHINE, status as WithdrawalEnd, undefined, scope)})
      returning 1`;
    return ended.length === 1;
  }
}
