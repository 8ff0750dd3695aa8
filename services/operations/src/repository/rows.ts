import type { Sql } from "@gw/db";
import type { LegRow, OperationRow } from "../domain/model.ts";
import type { Db, Tx } from "./db.ts";
import type { InsertRow, NewLeg, ProviderLeg } from "./store.ts";

/**
 * drizzle, attached to the same postgres.js client, makes it pass timestamps through as
 * text (see libs/db connect.ts): rows are read with timestamp strings and written with
 * ISO strings. These two functions are the only place that knows.
 */
const TIMESTAMPS = [
  "created_at",
  "updated_at",
  "expires_at",
  "review_started_at",
  "routing_deadline",
  "next_check_at",
  "stuck_alerted_at",
] as const;
export function hydrate<T extends OperationRow | undefined>(row: T): T {
  if (!row) return row;
  const r = row as unknown as Record<string, unknown>;
  for (const key of TIMESTAMPS) if (typeof r[key] === "string") r[key] = new Date(r[key] as string);
  return row;
}
export function toDriver(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) out[k] = v instanceof Date ? v.toISOString() : v;
  return out;
}

export async function findByMop(db: Db, shopId: string, mop: string): Promise<OperationRow | undefined> {
  const [row] = await db<OperationRow[]>`
    select * from operations.operations where shop_id = ${shopId} and merchant_operation_id = ${mop}`;
  return hydrate(row);
}

export async function findById(db: Db, shopId: string, id: string): Promise<OperationRow | undefined> {
  const [row] = await db<OperationRow[]>`
    select * from operations.operations where shop_id = ${shopId} and id = ${id}`;
  return hydrate(row);
}

export async function findAnyById(db: Db, id: string): Promise<OperationRow | undefined> {
  const [row] = await db<OperationRow[]>`select * from operations.operations where id = ${id}`;
  return hydrate(row);
}

export async function findAnyByMop(sql: Sql, mop: string, limit: number): Promise<OperationRow[]> {
  const rows = await sql<OperationRow[]>`
    select * from operations.operations where merchant_operation_id = ${mop}
    order by created_at desc, id desc limit ${limit}`;
  return rows.map((r) => hydrate(r));
}

export async function manualChecks(sql: Sql, limit: number, shopId?: string): Promise<OperationRow[]> {
  const rows = await sql<OperationRow[]>`
    select * from operations.operations
    where status = 'manual_check' ${shopId ? sql`and shop_id = ${shopId}` : sql``}
    order by updated_at, id limit ${limit}`;
  return rows.map((r) => hydrate(r));
}

export async function lock(tx: Tx, id: string): Promise<OperationRow | undefined> {
  const [row] = await tx<OperationRow[]>`select * from operations.operations where id = ${id} for update`;
  return hydrate(row);
}

export async function insert(sql: Sql, row: InsertRow): Promise<OperationRow | undefined> {
  const [inserted] = await sql<OperationRow[]>`
    insert into operations.operations ${sql(toDriver(row))}
    on conflict do nothing returning *`;
  return hydrate(inserted);
}

export async function markHostedPage(sql: Sql, operationId: string): Promise<void> {
  await sql`
    update operations.operations set hosted_page = true
    where id = ${operationId} and not hosted_page`;
}

export async function legs(db: Db, operationId: string): Promise<LegRow[]> {
  const rows = await db<{ id: string; amount: string; completed_at: string; receipt_id: string | null }[]>`
    select id, amount, completed_at, receipt_id from operations.legs where operation_id = ${operationId}
    order by completed_at, id`;
  return rows.map((r) => ({ ...r, completed_at: new Date(r.completed_at) }));
}

export async function providerLegs(sql: Sql, operationId: string): Promise<ProviderLeg[]> {
  const rows = await sql<(Omit<ProviderLeg, "completed_at"> & { completed_at: string })[]>`
    select id, provider, provider_leg_id, amount, completed_at, receipt_id
      from operations.legs where operation_id = ${operationId} order by completed_at, id`;
  return rows.map((r) => ({ ...r, completed_at: new Date(r.completed_at) }));
}

/**
 * Records a completed part of an operation, once per (operation, provider leg id): a
 * replay (or an id recorded before) changes nothing.
 */
export async function insertLeg(tx: Tx, leg: NewLeg): Promise<void> {
  await tx`
    insert into operations.legs (id, operation_id, provider, provider_leg_id, amount, completed_at, receipt_id)
    values (${leg.id}, ${leg.operationId}, ${leg.provider}, ${leg.providerLegId}, ${leg.amount},
      ${leg.completedAt}, ${leg.receiptId ?? null})
    on conflict do nothing`;
}

export async function recordCallback(
  tx: Tx,
  callback: { provider: string; callbackId: string; operationId: string },
): Promise<boolean> {
  const rows = await tx`
    insert into operations.callbacks (provider, callback_id, operation_id)
    values (${callback.provider}, ${callback.callbackId}, ${callback.operationId})
    on conflict do nothing returning 1`;
  return rows.length === 1;
}

export async function flexibleLinkOf(
  sql: Sql,
  operationId: string,
): Promise<{ k_hash: string; status: string } | undefined> {
  const [link] = await sql<{ k_hash: string; status: string }[]>`
    select k_hash, status from operations.flexible_links where operation_id = ${operationId}`;
  return link;
}

export async function isFlexiblePayment(sql: Sql, id: string): Promise<boolean> {
  const [row] = await sql<{ found: boolean }[]>`
    select exists (select 1 from operations.flexible_links where operation_id = ${id}) as found`;
  return row?.found === true;
}
