import type { Sql } from "@gw/db";
import type { ReconcileRow } from "../domain/model.ts";
import { millis } from "./db.ts";
import { hydrate } from "./rows.ts";
import { NON_TERMINAL } from "./store.ts";

/**
 * `OperationStoreCore.claimDue` in one statement: the rows are picked `for update skip
 * locked` and leased in the same statement, so concurrent reconcilers never pick the
 * same row while one of them holds it.
 */
export async function claimDue(
  sql: Sql,
  options: { afterMs: number; routingGraceMs: number; leaseMs: number; limit: number },
): Promise<ReconcileRow[]> {
  const rows = await sql<ReconcileRow[]>`
    with due as (
      select id from operations.operations
      where status in ('routing', 'pending', 'awaiting_confirmation')
        and case when status = 'routing'
          then coalesce(routing_deadline, created_at) + ${millis(sql, options.routingGraceMs)} <= now()
            and (next_check_at is null or next_check_at <= now())
          else coalesce(next_check_at,
            least(expires_at, created_at + ${millis(sql, options.afterMs)})) <= now()
        end
      order by coalesce(next_check_at, created_at)
      limit ${options.limit}
      for update skip locked
    )
    update operations.operations o set next_check_at = now() + ${millis(sql, options.leaseMs)}
    from due where o.id = due.id
    returning o.*`;
  return rows.map((r) => hydrate(r));
}

export async function scheduleCheck(
  sql: Sql,
  id: string,
  delayMs: number | null,
  counted: boolean,
): Promise<void> {
  const at =
    delayMs === null
      ? sql`null`
      : sql`least(now() + ${millis(sql, delayMs)}, case when expires_at > now() then expires_at end)`;
  await sql`
    update operations.operations
    set next_check_at = ${at}, reconcile_checks = reconcile_checks + ${counted ? 1 : 0}
    where id = ${id}`;
}

/** `OperationStoreCore.markStuck`: each row is returned once, by one replica, so its warning is logged once. */
export async function markStuck(sql: Sql, afterMs: number, limit: number): Promise<ReconcileRow[]> {
  const rows = await sql<ReconcileRow[]>`
    update operations.operations set stuck_alerted_at = now()
    where id in (
      select id from operations.operations
      where status in ${sql(NON_TERMINAL)} and stuck_alerted_at is null
        and created_at <= now() - ${millis(sql, afterMs)}
      limit ${limit}
      for update skip locked
    )
    returning *`;
  return rows.map((r) => hydrate(r));
}

export async function countStuck(sql: Sql, afterMs: number): Promise<Map<string, number>> {
  const rows = await sql<{ status: string; n: number }[]>`
    select status, count(*)::int as n from operations.operations
    where status in ${sql(NON_TERMINAL)} and created_at <= now() - ${millis(sql, afterMs)}
    group by status`;
  return new Map(rows.map((r) => [r.status, r.n]));
}
