import type { Sql } from "@gw/db";
import type { withdrawals } from "../db/schema.ts";
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
    insert into operations.withdrawals (operation_id, provider)
    values (${operationId}, ${provider})
    on conflict (operation_id, provider) do update
    set passed_over = false, status = 'asking', attempts = 0, last_error = null,
      next_attempt_at = now(), updated_at = now()
    where operations.withdrawals.passed_over`;
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
    insert into operations.withdrawals (operation_id, provider, passed_over, next_attempt_at)
    values (${operationId}, ${provider}, true,
      now() + make_interval(secs => ${leaseMs}::double precision / 1000))
    on conflict (operation_id, provider) do update
    set status = 'asking', attempts = 0, last_error = null,
      next_attempt_at = excluded.next_attempt_at, updated_at = now()
    where operations.withdrawals.passed_over`;
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
  /** Ends a withdrawal still asking with `status`, counting the ask (in `tx` when given). */
  end(w: WithdrawalRow, status: string, error: string | null, tx?: Db): Promise<void>;
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

  /** Leases up to `limit` due withdrawals, pushing them `leaseMs` ahead (`for update skip locked`). */
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
      where operation_id = ${operationId} and provider = ${provider} and status = 'asking'`;
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
      where operation_id = ${operationId} and passed_over and status in ('asking', 'final')
      order by provider`;
    return rows.map((r) => r.provider);
  }

  /** Counts an unanswered ask and schedules the next one `delayMs` ahead, if still asking. */
  async retryLater(w: WithdrawalRow, attempts: number, reason: string, delayMs: number): Promise<void> {
    await this.#sql`
      update operations.withdrawals
      set attempts = ${attempts}, last_error = ${reason}, updated_at = now(),
        next_attempt_at = now() + make_interval(secs => ${delayMs}::double precision / 1000)
      where operation_id = ${w.operation_id} and provider = ${w.provider} and status = 'asking'`;
  }

  /** Ends a withdrawal still asking with `status`, counting the ask (in `tx` when given). */
  async end(w: WithdrawalRow, status: string, error: string | null, tx: Db = this.#sql): Promise<void> {
    await tx`
      update operations.withdrawals
      set status = ${status}, attempts = ${w.attempts + 1}, last_error = ${error}, updated_at = now()
      where operation_id = ${w.operation_id} and provider = ${w.provider} and status = 'asking'`;
  }
}
