import type { Sql } from "@gw/db";

/** A payout that went to the operator queue: what the operator's log line names. */
export interface QueuedPayout {
  id: string;
  shop_id: string;
  routing_unresolved: string | null;
  created_at: Date;
}

/** `to_char`'s format of an ISO 8601 UTC timestamp with milliseconds. */
const ISO = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';

/** A payout of the queue as the operator reads it, with what is recorded of its providers. */
export interface OperatorQueueRow {
  id: string;
  shop_id: string;
  merchant_operation_id: string;
  amount: string | null;
  currency: string | null;
  /** The timestamps as ISO 8601 UTC strings. */
  created_at: string;
  operator_queued_at: string;
  routing_unresolved: string | null;
  routing_passed: string[];
  reconcile_checks: number;
  next_check_at: string | null;
  withdrawals:
    | { provider: string; status: string; attempts: number; last_error: string | null; updated_at: string }[]
    | null;
}

/** The operator queue (`OperatorQueueRepository` on Postgres, `MemoryOperatorQueue` in memory). */
export interface OperatorQueue {
  /** Queues the payout when still `routing`, older than `horizonMs` and not queued yet; it when this call queued it. */
  queueUnresolvedPayout(id: string, horizonMs: number): Promise<QueuedPayout | undefined>;
  /** Payouts in the queue still unresolved (`routing`), oldest in the queue first, at most `limit`. */
  listAwaiting(limit: number): Promise<OperatorQueueRow[]>;
  /** How many payouts in the queue are still unresolved. */
  countAwaiting(): Promise<number>;
}

/**
 * The operator queue of payouts whose provider's answer stayed unknown past the horizon
 * (`PAYOUT_OPERATOR_HORIZON_MS`): `operations.operations.operator_queued_at`, set once
 * by the reconciler, never a change of the operation's state (no version, no event).
 */
export class OperatorQueueRepository implements OperatorQueue {
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
    // The driver hands timestamps over as text here (see rows.ts): the Date the type promises.
    return row && { ...row, created_at: new Date(row.created_at) };
  }

  /** Payouts in the queue still unresolved (`routing`), oldest in the queue first, at most `limit`. */
  listAwaiting(limit: number): Promise<OperatorQueueRow[]> {
    const sql = this.#sql;
    return sql<OperatorQueueRow[]>`
      select o.id::text, o.shop_id::text, o.merchant_operation_id, o.expected_amount::text as amount,
             o.currency, to_char(o.created_at at time zone 'UTC', ${ISO}) as created_at,
             to_char(o.operator_queued_at at time zone 'UTC', ${ISO}) as operator_queued_at, o.routing_unresolved, o.routing_passed,
             o.reconcile_checks, to_char(o.next_check_at at time zone 'UTC', ${ISO}) as next_check_at,
             (select json_agg(json_build_object('provider', w.provider, 'status', w.status,
                                'attempts', w.attempts, 'last_error', w.last_error,
                                'updated_at', to_char(w.updated_at at time zone 'UTC', ${ISO}))
                              order by w.provider)
                from operations.withdrawals w where w.operation_id = o.id) as withdrawals
      from operations.operations o
      where o.operator_queued_at is not null and o.status = 'routing'
      order by o.operator_queued_at, o.id
      limit ${limit}`;
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
