import type { Sql } from "@gw/db";

/** A payout that went to the operator queue: what the operator's log line names. */
export interface QueuedPayout {
  id: string;
  shop_id: string;
  routing_unresolved: string | null;
  created_at: Date;
}

/**
 * The operator queue of payouts whose provider's answer stayed unknown past the horizon
 * (`PAYOUT_OPERATOR_HORIZON_MS`): `operations.operations.operator_queued_at`, set once
 * by the reconciler, never a change of the operation's state (no version, no event).
 */
export class OperatorQueueRepository {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /**
   * Queues the payout when it is still `routing`, older than `horizonMs` and not queued
   * yet; returns it when this call queued it (once, across replicas), else undefined.
   */
  async queueUnresolvedPayout(id: string, horizonMs: number): Promise<QueuedPayout | undefined> {
    const sql = this.#sql;
    const [row] = await sql<QueuedPayout[]>`
      update operations.operations set operator_queued_at = now()
      where id = ${id} and type = 'payout' and status = 'routing' and operator_queued_at is null
        and created_at <= now() - make_interval(secs => ${horizonMs / 1000})
      returning id, shop_id, routing_unresolved, created_at`;
    return row;
  }

  /** Payouts in the queue still unresolved (`routing`): what an operator has to decide. */
  async countAwaiting(): Promise<number> {
    const sql = this.#sql;
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from operations.operations
      where operator_queued_at is not null and status = 'routing'`;
    return row?.n ?? 0;
  }
}
