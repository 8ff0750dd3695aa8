import type { Sql } from "@gw/db";

/** One operation as the admin audit read shows it, with its completed legs per provider. */
export interface AuditRow {
  id: string;
  shop_id: string;
  type: string;
  status: string;
  provider: string | null;
  amount: string | null;
  actual_amount: string;
  currency: string | null;
  placeholder: boolean;
  legs: { provider: string; amount: string; count: number }[] | null;
  created_at: Date;
  updated_at: Date;
}

/** The admin audit reads (`AuditRepository` on Postgres, `MemoryAudit` in memory). */
export interface Audit {
  /** Every operation of every shop in id order after `cursor` (a UUID, or "" for the first page), at most `limit`. */
  operations(cursor: string, limit: number): Promise<AuditRow[]>;
}

/** The admin audit reads of the operations schema. */
export class AuditRepository implements Audit {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** Every operation of every shop in id order after `cursor` (a UUID, or "" for the first page), at most `limit`. */
  async operations(cursor: string, limit: number): Promise<AuditRow[]> {
    const sql = this.#sql;
    // The driver hands timestamps over as text: they become the `Date`s the type says.
    const rows = await sql<
      (Omit<AuditRow, "created_at" | "updated_at"> & { created_at: string; updated_at: string })[]
    >`
      select o.id::text, o.shop_id::text, o.type, o.status, o.provider, o.expected_amount::text as amount,
             o.actual_amount::text, o.currency, o.request_hash is null as placeholder,
             (select json_agg(json_build_object('provider', l.provider, 'amount', l.amount::text, 'count', l.n)
                              order by l.provider)
                from (select provider, sum(amount) as amount, count(*)::int as n from operations.legs
                      where operation_id = o.id group by provider) l) as legs,
             o.created_at, o.updated_at
      from operations.operations o
      where ${cursor === "" ? sql`true` : sql`o.id > ${cursor}::uuid`}
      order by o.id
      limit ${limit}`;
    return rows.map((r) => ({
      ...r,
      created_at: new Date(r.created_at),
      updated_at: new Date(r.updated_at),
    }));
  }
}
