import type { Sql } from "@gw/db";

/** One reference as a provider's books hold it: what it took or paid for it, finally. */
export interface BookEntry {
  provider: string;
  reference: string;
  direction: "payin" | "payout";
  currency: string;
  /** The amount the gateway asked for. */
  amount: string;
  decision: "accepted" | "declined" | "no_answer";
  status: "pending" | "completed" | "rejected" | "withdrawn";
  /** The sum of the completion's legs: money collected (payin) or paid out (payout); "0.00" otherwise. */
  settled: string;
  legs: number;
}

/** The sandbox's own books, as `GET /control/books` answers them. */
export interface Books {
  /** Per provider and currency: money collected from payers and paid out to recipients. */
  totals: {
    provider: string;
    currency: string;
    collected: string;
    paid_out: string;
    payins_completed: number;
    payouts_completed: number;
  }[];
  references: BookEntry[];
  /** Faults injected so far, by `stage.kind`. */
  faults: Record<string, number>;
}

/**
 * The provider side of the money: every reference each hosted provider received, with
 * the money its completion moved (the sum of its legs), and the totals per provider and
 * currency. Sums are Postgres numeric, rendered with scale 2.
 */
export async function books(sql: Sql): Promise<Books> {
  const references = await sql<BookEntry[]>`
    select o.provider, o.reference, o.direction, o.currency, o.amount::text as amount, o.decision, o.status,
           to_char(coalesce(sum(l.amount) filter (where o.status = 'completed'), 0), 'FM999999999999990.00') as settled,
           count(l.id)::int as legs
    from sandbox.operations o left join sandbox.legs l on l.operation_id = o.id
    group by o.id
    order by o.provider, o.created_at`;
  const totals = await sql<Books["totals"]>`
    select o.provider, o.currency,
           to_char(coalesce(sum(l.amount) filter (where o.direction = 'payin'), 0), 'FM999999999999990.00') as collected,
           to_char(coalesce(sum(l.amount) filter (where o.direction = 'payout'), 0), 'FM999999999999990.00') as paid_out,
           count(distinct o.id) filter (where o.direction = 'payin')::int as payins_completed,
           count(distinct o.id) filter (where o.direction = 'payout')::int as payouts_completed
    from sandbox.operations o left join sandbox.legs l on l.operation_id = o.id
    where o.status = 'completed'
    group by o.provider, o.currency
    order by o.provider, o.currency`;
  const faultRows = await sql<{ kind: string; n: number }[]>`
    select kind, count(*)::int as n from sandbox.fault_log group by kind order by kind`;
  return {
    totals: [...totals],
    references: [...references],
    faults: Object.fromEntries(faultRows.map((r) => [r.kind, r.n])),
  };
}
