import type { Sql } from "@gw/db";
import type { OperationRow } from "../domain/model.ts";
import { columnList, defined, millis } from "./db.ts";
import { reopenPatch } from "./guard.ts";
import { providersOf, type RouteColumns, routeOf } from "./routes.ts";
import { hydrate, toDriver } from "./rows.ts";
import type { ClaimOutcome, ClaimRow, CreateContext, DataPatch } from "./store.ts";

/** `OperationStoreCore.createContext` in one statement. */
export async function createContext(
  sql: Sql,
  shopId: string,
  mop: string,
  method: string,
  direction: "payin" | "payout",
  budgetMs: number,
): Promise<CreateContext> {
  const [row] = await sql<
    (Record<string, unknown> & RouteColumns & { ctx_deadline: string; ctx_link_key: boolean })[]
  >`
    select o.*, r.payin as route_payin, r.payout as route_payout,
      r.settlement_currency as route_settlement_currency, ${providersOf(sql, direction)},
      now() + ${millis(sql, budgetMs)} as ctx_deadline,
      exists (select 1 from operations.flexible_links l
               where l.shop_id = ${shopId} and l.merchant_operation_id = ${mop}) as ctx_link_key
    from (select 1) as one
    left join operations.operations o on o.shop_id = ${shopId} and o.merchant_operation_id = ${mop}
    left join operations.routes r on r.shop_id = ${shopId} and r.method = ${method}`;
  if (!row) throw new Error("createContext returned no row");
  const {
    route_payin,
    route_payout,
    route_settlement_currency,
    route_providers,
    route_config_version,
    ctx_deadline,
    ctx_link_key,
    ...operation
  } = row;
  return {
    existing: operation.id == null ? undefined : hydrate(operation as unknown as OperationRow),
    routing:
      route_payin == null
        ? undefined
        : routeOf(
            { route_payin, route_payout, route_settlement_currency, route_providers, route_config_version },
            direction,
          ),
    deadline: new Date(ctx_deadline),
    linkHoldsKey: ctx_link_key === true,
  };
}

/** One create's claim: its row and how it may claim (see `OperationStoreCore.claim`). */
export interface ClaimItem {
  row: ClaimRow;
  options: { budgetMs: number; forLink: boolean; configVersion: string | null };
}

/** The columns a claim writes from its `ClaimRow`, in the insert's order. */
const CLAIMED_COLUMNS = [
  "id",
  "shop_id",
  "merchant_id",
  "merchant_operation_id",
  "request_hash",
  "type",
  "method",
  "currency",
  "expected_amount",
  "client_id",
  "client_ip",
  "number",
  "name",
  "bankname",
  "settlement_currency",
  "fx_rate",
  "fx_source",
  "commission_percent",
  "commission_fixed",
  "pricing_version",
] as const satisfies readonly (keyof ClaimRow)[];

/**
 * `OperationStoreCore.claim` for several creates (distinct keys) in one statement, so one
 * commit: each row is typed by the table's own row type (`jsonb_populate_record`), guarded
 * by its own key's flexible link and its own configuration version, inserted in key order
 * (two replicas' batches wait on each other's keys in one order, never in a cycle) with
 * `on conflict do nothing`, and answered with what it claimed or the row already there.
 * The key `existing` answers is as this statement's snapshot has it: none of `claimed`,
 * `existing` and `configStale` is also another request's claim after the snapshot (read it
 * again).
 */
export async function claimAll(sql: Sql, items: readonly ClaimItem[]): Promise<ClaimOutcome[]> {
  const [only] = items;
  if (items.length === 1 && only) return [await claimOne(sql, only)];
  const input = items.map(({ row, options }, ord) => ({
    ord,
    row: defined(Object.fromEntries(CLAIMED_COLUMNS.map((c) => [c, row[c]]))),
    budget_ms: options.budgetMs,
    for_link: options.forLink,
    config_version: options.configVersion,
  }));
  const columns = columnList(sql, CLAIMED_COLUMNS);
  // The keys' rows and links are read through their unique indexes by `= any(...)` on
  // both key columns, whatever the planner's statistics say of the tables' sizes (a join
  // with the batch, whose size it cannot see, would scan a table it thinks small).
  const shops = [...new Set(items.map((c) => c.row.shop_id))];
  const mops = [...new Set(items.map((c) => c.row.merchant_operation_id))];
  const found = await sql<
    (OperationRow & {
      claim_ord: number;
      claim_kind: "claimed" | "existing" | null;
      claim_link: boolean;
      claim_stale: boolean;
    })[]
  >`
    with input as (
      select (e.item->>'ord')::int as ord, (e.item->>'budget_ms')::double precision as budget_ms,
        (e.item->>'for_link')::boolean as for_link, (e.item->>'config_version')::bigint as config_version, r.*
      from jsonb_array_elements(${JSON.stringify(input)}::jsonb) as e(item),
        jsonb_populate_record(null::operations.operations, e.item->'row') as r
    ), existing as (
      select o.* from operations.operations o
      where o.shop_id = any(${shops}::uuid[]) and o.merchant_operation_id = any(${mops}::text[])
    ), links as (
      select l.shop_id, l.merchant_operation_id from operations.flexible_links l
      where l.shop_id = any(${shops}::uuid[]) and l.merchant_operation_id = any(${mops}::text[])
    ), guard as (
      select i.*,
        exists (select 1 from links l
                 where l.shop_id = i.shop_id and l.merchant_operation_id = i.merchant_operation_id) as holds,
        not exists (select 1 from operations.config_version v where v.version = i.config_version) as stale
      from input i
    ), claimed as (
      insert into operations.operations (${columns}, status, routing_deadline)
      select ${columns}, 'routing', now() + make_interval(secs => budget_ms / 1000)
      -- A key with a row (as this snapshot has it) is not inserted: answered as existing
      -- without waiting on a lock another transaction may hold on that row.
      from guard g where (for_link or not holds) and not stale
        and not exists (select 1 from existing x
                         where x.shop_id = g.shop_id and x.merchant_operation_id = g.merchant_operation_id)
      order by shop_id, merchant_operation_id
      on conflict do nothing
      returning *
    )
    select g.ord as claim_ord, g.holds as claim_link, g.stale as claim_stale, k.*
    from guard g left join (
      select 'claimed' as claim_kind, c.* from claimed c
      union all
      select 'existing', x.* from existing x
    ) k on k.shop_id = g.shop_id and k.merchant_operation_id = g.merchant_operation_id`;
  const outcomes: ClaimOutcome[] = [];
  for (const { claim_ord, claim_kind, claim_link, claim_stale, ...operation } of found) {
    const row = claim_kind === null ? undefined : hydrate(operation as OperationRow);
    outcomes[claim_ord] = {
      ...(claim_kind === "claimed" ? { claimed: row } : claim_kind === "existing" ? { existing: row } : {}),
      linkHoldsKey: claim_link === true,
      configStale: claim_stale === true,
    };
  }
  if (outcomes.length !== items.length || outcomes.includes(undefined as never))
    throw new Error(`claim answered ${found.length} rows for ${items.length} claims`);
  return outcomes;
}

/**
 * One claim in the statement of a lone create (no batch to wait for it): its key's row
 * and link read by their parameters, which costs Postgres less than the batch's `jsonb`.
 */
async function claimOne(sql: Sql, { row, options }: ClaimItem): Promise<ClaimOutcome> {
  defined(row);
  const [out] = await sql<
    (OperationRow & {
      claim_kind: "claimed" | "existing" | null;
      claim_link: boolean;
      claim_stale: boolean;
    })[]
  >`
    with guard as (
      select exists (select 1 from operations.flexible_links l
                      where l.shop_id = ${row.shop_id} and l.merchant_operation_id = ${row.merchant_operation_id}) as holds,
        not exists (select 1 from operations.config_version v
                     where v.version = ${options.configVersion}::bigint) as stale
    ), claimed as (
      insert into operations.operations (id, shop_id, merchant_id, merchant_operation_id, request_hash,
        type, status, method, currency, expected_amount, client_id, client_ip, number, name, bankname,
        settlement_currency, fx_rate, fx_source, commission_percent, commission_fixed, pricing_version,
        routing_deadline)
      select ${row.id}, ${row.shop_id}, ${row.merchant_id}, ${row.merchant_operation_id}, ${row.request_hash},
        ${row.type}, 'routing', ${row.method}, ${row.currency}, ${row.expected_amount}, ${row.client_id},
        ${row.client_ip}, ${row.number}, ${row.name}, ${row.bankname}, ${row.settlement_currency},
        ${row.fx_rate}, ${row.fx_source}, ${row.commission_percent}, ${row.commission_fixed},
        ${row.pricing_version}, now() + ${millis(sql, options.budgetMs)}
      from guard where (${options.forLink} or not guard.holds) and not guard.stale
      on conflict do nothing
      returning *
    )
    select k.*, guard.holds as claim_link, guard.stale as claim_stale from guard left join (
      select 'claimed' as claim_kind, c.* from claimed c
      union all
      select 'existing', o.* from operations.operations o
       where o.shop_id = ${row.shop_id} and o.merchant_operation_id = ${row.merchant_operation_id}
    ) k on true`;
  if (!out) throw new Error("claim returned no row");
  const { claim_kind, claim_link, claim_stale, ...operation } = out;
  const found = claim_kind === null ? undefined : hydrate(operation as OperationRow);
  return {
    ...(claim_kind === "claimed" ? { claimed: found } : claim_kind === "existing" ? { existing: found } : {}),
    linkHoldsKey: claim_link === true,
    configStale: claim_stale === true,
  };
}

/** `ms` milliseconds from now by the database's clock. */
export async function deadlineIn(sql: Sql, ms: number): Promise<Date> {
  const [row] = await sql<{ at: string }[]>`select now() + ${millis(sql, ms)} as at`;
  return new Date(row?.at ?? Date.now() + ms);
}

/**
 * `OperationStoreCore.takeOverRouting`: only when the database's clock says the deadline
 * plus `graceMs` has passed, so no replica compares its own clock with a deadline another
 * one wrote; in one version-checked statement, so of two would-be drivers only one wins.
 */
export async function takeOverRouting(
  sql: Sql,
  before: OperationRow,
  budgetMs: number,
  graceMs: number,
): Promise<OperationRow | undefined> {
  const [row] = await sql<OperationRow[]>`
    update operations.operations
    set routing_deadline = now() + ${millis(sql, budgetMs)},
      version = version + 1, updated_at = now()
    where id = ${before.id} and version = ${before.version} and status = 'routing'
      and coalesce(routing_deadline, created_at) + ${millis(sql, graceMs)} <= now()
    returning *`;
  return hydrate(row);
}

/**
 * `OperationStoreCore.reopen` in one statement, so of two retries only one gets the row.
 * The operation is created now, as far as anyone can tell (nothing of it was ever
 * announced): `created_at` restarts, and so does the reconciler's bookkeeping.
 */
export async function reopen(
  sql: Sql,
  before: OperationRow,
  data: DataPatch,
): Promise<OperationRow | undefined> {
  const patch = reopenPatch(before, data);
  const columns = toDriver({ ...patch, version: String(BigInt(before.version) + 1n) });
  const [row] = await sql<OperationRow[]>`
    update operations.operations
    set ${sql(columns)}, created_at = now(), updated_at = now(),
      next_check_at = null, reconcile_checks = 0, stuck_alerted_at = null
    where id = ${before.id} and version = ${before.version}
    returning *`;
  return hydrate(row);
}
