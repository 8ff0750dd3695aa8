import { randomUUID } from "node:crypto";
import type { Sql } from "@gw/db";
import { eventHeaders } from "@gw/events";
import { Decimal } from "@gw/money";
import type { ReceiptItem } from "@gw/proto/gateway/operations/v1/operations_pb";
import { type EventStatements, operationEvent } from "../domain/events.ts";
import { type Applied, apply, applyWithoutLegs, type Fact } from "../domain/lifecycle/apply.ts";
import { type DomainError, isDomainError, LegsDisagreeError } from "../domain/lifecycle/errors.ts";
import type { LegRow, OperationRow } from "../domain/model.ts";
import { receiptsOf } from "../domain/receipts-of.ts";
import { columnList, type Db, defined } from "./db.ts";
import { ALONE, type BatchOptions, GroupCommit } from "./group-commit.ts";
import { assertTransition, writesOnlyTheRow } from "./guard.ts";
import { legs as readLegs, toDriver } from "./rows.ts";
import type { ApplyOptions, DataPatch, OperationPatch } from "./store.ts";

/**
 * The connection and the events prefix the lifecycle's writes queue their events under,
 * and the batcher their autocommit writes share (`GroupCommit`): concurrent writes of one
 * replica go in one statement and one commit.
 */
export interface Writer {
  sql: Sql;
  prefix: string;
  batch: GroupCommit<RowWrite, boolean>;
}

/** One version-checked write of a row, with the event it queues. */
export interface RowWrite {
  id: string;
  /** The version the write expects the row at. */
  version: string;
  /** Column values, as the driver takes them. */
  columns: Record<string, unknown>;
  /** Its headers are taken when the write is asked for, in the asking request's trace. */
  event?: { id: string; subject: string; payload: Uint8Array; headers: Record<string, string> } | undefined;
}

/** A `Writer` on `sql`, whose autocommit writes are batched as `batches` says. */
export function writer(sql: Sql, prefix: string, batches: BatchOptions = {}): Writer {
  return {
    sql,
    prefix,
    batch: new GroupCommit({
      kind: "transition",
      ...batches,
      key: (w) => w.id,
      run: (ws) => writeRows(sql, ws),
    }),
  };
}

/**
 * Moves `before` to `before + patch` if nobody changed the row since it was read: one
 * statement that updates the row only if its version is still the one read (optimistic
 * concurrency) and, with `emit`, queues the event for the new state in the same
 * statement, so a change and its event can never be split. Returns the new row, or
 * undefined when the version moved on (re-read and decide). Only `applyFact` writes a
 * change, the one `apply` decided for a fact; the check against the table stays as the
 * last guard. Outside a transaction the statement is shared with the replica's other
 * writes of the moment (`Writer.batch`).
 */
export async function transition(
  w: Writer,
  before: OperationRow,
  patch: OperationPatch,
  options: {
    emit: boolean;
    receipts?: ReceiptItem[] | undefined;
    statements?: EventStatements | undefined;
    tx?: Db;
  },
): Promise<OperationRow | undefined> {
  const tx = options.tx ?? w.sql;
  assertTransition(before, patch, options.emit);
  const after: OperationRow = {
    ...before,
    ...patch,
    version: String(BigInt(before.version) + 1n),
    updated_at: new Date(),
  };
  if (after.status === "completed") await assertLegsAgree(after, tx);
  const write: RowWrite = {
    id: before.id,
    version: before.version,
    columns: toDriver({ ...patch, version: after.version, updated_at: after.updated_at }),
    event: options.emit
      ? {
          ...operationEvent(w.prefix, after, options.receipts, undefined, options.statements),
          headers: eventHeaders(),
        }
      : undefined,
  };
  const [changed] = tx === w.sql ? [await w.batch.submit(write)] : await writeRows(tx, [write]);
  return changed === true ? after : undefined;
}

/**
 * `writes` (distinct rows) in one statement: each row updated to its columns if still at
 * its version, each event queued only with its row's update, the outbox relay woken when
 * any was. Answers, in order, whether each row was written. A batch locks its rows in id
 * order and skips the ones another transaction holds (`ALONE`: each is sent again in a
 * statement of its own, which waits), so one lock wait never holds the others, two
 * replicas' batches never wait on each other in a cycle, and a transaction that holds a
 * row and waits for a write of its own in the same batch is never waited on.
 */
export async function writeRows(db: Db, writes: readonly RowWrite[]): Promise<(boolean | typeof ALONE)[]> {
  const [only] = writes;
  if (writes.length === 1 && only) return [await writeRow(db, only)];
  const columns = [...new Set(writes.flatMap((w) => Object.keys(w.columns)))].sort();
  const input = writes.map((w, ord) => ({
    ord,
    id: w.id,
    version: w.version,
    patch: defined(w.columns),
    event: w.event && {
      id: w.event.id,
      subject: w.event.subject,
      payload: Buffer.from(w.event.payload).toString("base64"),
      headers: w.event.headers,
    },
  }));
  const wake = writes.some((w) => w.event) ? db`, pg_notify('outbox_operations', '')` : db``;
  const lock = db`order by o.id for no key update of o skip locked`;
  // The rows are found through the primary key by "= any(...)", whatever the planner's
  // statistics say of the table's size (a join with the batch would scan a table it thinks small).
  const ids = writes.map((w) => w.id);
  const [row] = await db<{ written: number[] | null; skipped: number[] | null }[]>`
    with input as (
      select (e.item->>'ord')::int as ord, (e.item->>'id')::uuid as id,
        (e.item->>'version')::bigint as version, e.item->'patch' as patch, e.item->'event' as event
      from jsonb_array_elements(${JSON.stringify(input)}::jsonb) as e(item)
    ), locked as (
      select o.id from operations.operations o where o.id = any(${ids}::uuid[]) ${lock}
    ), upd as (
      update operations.operations o
      set (${columnList(db, columns)}) = (select ${columnList(db, columns, "p")} from jsonb_populate_record(o, i.patch) as p)
      from input i join locked l on l.id = i.id
      where o.id = any(${ids}::uuid[]) and o.id = i.id and o.version = i.version
      returning i.ord, i.event
    ), ev as (
      insert into operations.outbox (id, subject, payload, headers)
      select (event->>'id')::uuid, event->>'subject', decode(event->>'payload', 'base64'), event->'headers'
      from upd where jsonb_typeof(event) = 'object'
    )
    select (select array_agg(ord) from upd) as written,
      (select array_agg(ord) from input i where not exists (select 1 from locked l where l.id = i.id)) as skipped${wake}`;
  const written = new Set(row?.written ?? []);
  const skipped = new Set(row?.skipped ?? []);
  return writes.map((_, ord) => (written.has(ord) ? true : skipped.has(ord) ? ALONE : false));
}

/**
 * One write in the statement of a lone write (no batch to wait for it): the row by its
 * parameters, which costs Postgres less than the batch's `jsonb`; it waits on a lock
 * another transaction holds on the row, as any write of it alone would.
 */
async function writeRow(db: Db, w: RowWrite): Promise<boolean> {
  const columns = defined(w.columns);
  if (!w.event) {
    const rows = await db`
      update operations.operations set ${db(columns)}
      where id = ${w.id} and version = ${w.version} returning id`;
    return rows.length === 1;
  }
  const rows = await db<{ changed: number }[]>`
    with upd as (
      update operations.operations set ${db(columns)}
      where id = ${w.id} and version = ${w.version} returning id
    ), ev as (
      insert into operations.outbox (id, subject, payload, headers)
      select ${w.event.id}, ${w.event.subject}, ${Buffer.from(w.event.payload)}, ${JSON.stringify(w.event.headers)}::jsonb from upd
    )
    select count(*)::int as changed, pg_notify('outbox_operations', '') from upd`;
  return rows[0]?.changed === 1;
}

/**
 * `OperationStoreCore.applyFact`: a fact decided without the legs that adds none (an
 * acceptance, a cancel) is the one statement of `transition`, atomic on its own, with no
 * transaction around it; any other reads the legs and writes in one transaction.
 */
export async function applyFact(
  w: Writer,
  before: OperationRow,
  fact: Fact,
  options: ApplyOptions,
): Promise<{ row: OperationRow | undefined; applied: Applied }> {
  const tx = options.tx;
  if (!tx) {
    const blind = applyWithoutLegs(before, fact);
    if (blind && (isDomainError(blind) || !blind.change || writesOnlyTheRow(blind.change)))
      return write(w, before, blind, w.sql, options);
    return w.sql.begin((t) => applyFact(w, before, fact, { ...options, tx: t })) as Promise<{
      row: OperationRow | undefined;
      applied: Applied;
    }>;
  }
  const legs = await readLegs(tx, before.id);
  return write(w, before, apply({ ...before, legs }, fact), tx, options, legs);
}

/** Writes what `apply` decided for `before` (the legs it read, if any, are `legs`). */
async function write(
  w: Writer,
  before: OperationRow,
  applied: Applied | DomainError,
  tx: Db,
  { data, statements }: { data?: DataPatch | undefined; statements?: EventStatements | undefined },
  legs: LegRow[] = [],
): Promise<{ row: OperationRow | undefined; applied: Applied }> {
  if (isDomainError(applied)) throw applied;
  const { change, events } = applied;
  if (!change) {
    // Nothing of the lifecycle changes (a declined provider during the cascade): the
    // caller's own columns (its cascade position) are still written, version-checked.
    if (!data || Object.keys(data).length === 0) return { row: before, applied };
    return { row: await transition(w, before, data, { emit: false, tx }), applied };
  }
  for (const leg of change.legs)
    await tx`
      insert into operations.legs (id, operation_id, provider, provider_leg_id, amount, completed_at, receipt_id)
      values (${randomUUID()}, ${before.id}, ${before.provider ?? "receipt"}, ${leg.id}, ${leg.amount},
        ${(leg.completedAt ?? new Date()).toISOString()}, ${leg.receiptId ?? null})
      on conflict (operation_id, provider_leg_id) do nothing`;
  const patch: OperationPatch = { ...data, ...change.patch };
  const receipts =
    change.to === "completed"
      ? receiptsOf({ ...before, ...patch }, change.legs.length > 0 ? await readLegs(tx, before.id) : legs)
          .receipts
      : undefined;
  const row = await transition(w, before, patch, { emit: events.length > 0, receipts, statements, tx });
  return { row, applied };
}

/**
 * A completion's actual amount covers every recorded leg (it may exceed them: a
 * provider that reported no legs completed the rest). Checked before the write, so a
 * completion that would leave legs unbooked is refused instead of announced.
 */
async function assertLegsAgree(after: OperationRow, tx: Db): Promise<void> {
  const [row] = await tx<{ total: string }[]>`
    select coalesce(sum(amount), 0)::text as total from operations.legs where operation_id = ${after.id}`;
  const legs = new Decimal(row?.total ?? "0");
  if (legs.gt(after.actual_amount))
    throw new LegsDisagreeError(after.id, after.actual_amount, legs.toFixed(2));
}
