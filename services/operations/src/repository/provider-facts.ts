import type { Sql } from "@gw/db";
import type { providerFacts } from "../db/schema.ts";
import type { OperationRow, SnakeKeys } from "../domain/model.ts";
import { FACT_MACHINE, type FactState } from "../domain/provider-fact-states.ts";
import { assertMove, fromStates } from "../domain/state-machine.ts";
import type { Db, Tx } from "./db.ts";

/**
 * An `operations.provider_facts` row as postgres.js returns it, typed from the drizzle
 * schema: the value sets kept as text narrowed where the code relies on them, timestamps
 * as the driver hands them over (text, see operations.ts).
 */
export type FactRow = Omit<
  SnakeKeys<typeof providerFacts.$inferSelect>,
  "status" | "resolved_at" | "created_at"
> & {
  status: FactState;
  resolved_at: string | Date | null;
  created_at: string | Date;
};

/** The columns a new fact is recorded with. */
export type NewFact = Pick<
  FactRow,
  | "id"
  | "provider"
  | "reference"
  | "fact_key"
  | "operation_id"
  | "shop_id"
  | "merchant_id"
  | "kind"
  | "provider_status"
  | "direction"
  | "amount"
  | "currency"
>;

/** What an operator's resolution of a fact writes (`markFactResolved`). */
export interface FactResolution {
  action: string;
  operator: string;
  reason: string;
  figures: { settlement: string; commission: string; currency: string } | undefined;
}

/**
 * `operations.provider_facts` as a store keeps it: what `ProviderFactRepository` runs on
 * Postgres and `MemoryProviderFacts` keeps in memory. The reads outside a caller's
 * transaction, and the statements the module functions below run in one (`insertFact`,
 * `lockFact`, `markFactResolved`, `mismatchTotal`), in `tx` (a memory store's own, there).
 */
export interface ProviderFacts {
  /** Open facts per kind, database-wide (in no order). */
  countOpen(): Promise<{ kind: string; n: number }[]>;
  /** The operator's review queue: open facts first, then the newest. */
  list(options: FactFilter): Promise<FactRow[]>;
  /** `insertFact`: once per (provider, reference, fact_key); undefined when it was recorded before. */
  insert(tx: Tx, fact: NewFact): Promise<FactRow | undefined>;
  /** `lockFact`: the fact, locked for the rest of `tx`. */
  lock(tx: Tx, id: string): Promise<FactRow | undefined>;
  /** `markFactResolved`: resolved once; a resolved fact is a `StateMoveRefusedError`. */
  markResolved(tx: Tx, id: string, resolution: FactResolution): Promise<FactRow | undefined>;
  /** `mismatchTotal`: what an operation's `amount_mismatch` facts add up to, as text. */
  mismatchTotal(tx: Tx, operationId: string): Promise<string>;
}

/** The queries of `operations.provider_facts`; those in a caller's transaction are the module functions below. */
export class ProviderFactRepository implements ProviderFacts {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** Open facts per kind, database-wide. */
  countOpen(): Promise<{ kind: string; n: number }[]> {
    return this.#sql<{ kind: string; n: number }[]>`
      select kind, count(*)::int as n from operations.provider_facts
      where status = ${"open" satisfies FactState} group by kind`;
  }

  /** The operator's review queue: open facts first, then the newest. */
  list(options: FactFilter): Promise<FactRow[]> {
    return listFacts(this.#sql, options);
  }

  insert(tx: Tx, fact: NewFact): Promise<FactRow | undefined> {
    return insertFact(tx, fact);
  }

  lock(tx: Tx, id: string): Promise<FactRow | undefined> {
    return lockFact(tx, id);
  }

  markResolved(tx: Tx, id: string, resolution: FactResolution): Promise<FactRow | undefined> {
    return markFactResolved(tx, id, resolution);
  }

  mismatchTotal(tx: Tx, operationId: string): Promise<string> {
    return mismatchTotal(tx, operationId);
  }
}

/** Which facts a list shows: by status, of one operation, how many. */
export interface FactFilter {
  status?: FactState;
  operationId?: string;
  limit: number;
}

/** Records a fact once per (provider, reference, fact_key); undefined when it was recorded before. */
export async function insertFact(tx: Db, fact: NewFact): Promise<FactRow | undefined> {
  const [row] = await tx<FactRow[]>`
    insert into operations.provider_facts
      (id, provider, reference, fact_key, operation_id, shop_id, merchant_id, kind, provider_status,
       direction, amount, currency, status)
    values (${fact.id}, ${fact.provider}, ${fact.reference}, ${fact.fact_key}, ${fact.operation_id},
      ${fact.shop_id}, ${fact.merchant_id}, ${fact.kind}, ${fact.provider_status},
      ${fact.direction}, ${fact.amount}, ${fact.currency}, ${FACT_MACHINE.initial})
    on conflict (provider, reference, fact_key) do nothing
    returning *`;
  return row;
}

function listFacts(sql: Db, options: FactFilter): Promise<FactRow[]> {
  return sql<FactRow[]>`
    select * from operations.provider_facts
    where true
    ${options.status ? sql`and status = ${options.status}` : sql``}
    ${options.operationId ? sql`and operation_id = ${options.operationId}` : sql``}
    order by (status = 'open') desc, created_at desc, id
    limit ${options.limit}`;
}

/** Locks a fact for the rest of the transaction. */
export async function lockFact(tx: Tx, id: string): Promise<FactRow | undefined> {
  const [fact] = await tx<FactRow[]>`
    select * from operations.provider_facts where id = ${id} for update`;
  return fact;
}

/** The states a fact is resolved from (`FACT_MACHINE`): the guard of `markFactResolved`. */
export const RESOLVE_FROM = fromStates(FACT_MACHINE, "resolved", "operator_resolved");

/**
 * Writes an operator's resolution of a fact (locked by the caller, who found it open);
 * undefined when there is no such fact. A fact in a state the table does not resolve from
 * (resolved already) is a `StateMoveRefusedError`: a resolution is never overwritten.
 */
export async function markFactResolved(
  tx: Tx,
  id: string,
  resolution: FactResolution,
): Promise<FactRow | undefined> {
  const { figures } = resolution;
  const [resolved] = await tx<FactRow[]>`
    update operations.provider_facts
    set status = ${"resolved" satisfies FactState}, resolution = ${resolution.action}, resolved_by = ${resolution.operator},
      resolution_reason = ${resolution.reason}, resolved_at = now(),
      settlement_amount = ${figures?.settlement ?? null}, commission_amount = ${figures?.commission ?? null},
      settlement_currency = ${figures?.currency ?? null}
    where id = ${id} and status = any(${RESOLVE_FROM})
    returning *`;
  if (resolved) return resolved;
  const [found] = await tx<
    { status: string }[]
  >`select status from operations.provider_facts where id = ${id}`;
  if (found) assertMove(FACT_MACHINE, found.status, "resolved", undefined, id);
  return undefined;
}

/** The methods a provider is configured for; undefined when it has no configuration. */
export async function providerMethods(tx: Db, provider: string): Promise<string[] | undefined> {
  const [row] = await tx<{ methods: string[] }[]>`
    select methods from operations.providers where name = ${provider}`;
  return row?.methods;
}

/** The operation a fact refers to, unlocked (its pricing and FX rate). */
export async function operationOfFact(tx: Db, operationId: string): Promise<OperationRow | undefined> {
  const [op] = await tx<OperationRow[]>`select * from operations.operations where id = ${operationId}`;
  return op;
}

/** What an operation's legs of other providers than `provider` (the pool's, say) add up to, as text. */
export async function legsTotalExcept(tx: Tx, operationId: string, provider: string): Promise<string> {
  const [others] = await tx<{ total: string }[]>`
    select coalesce(sum(amount), 0)::text as total from operations.legs
    where operation_id = ${operationId} and provider <> ${provider}`;
  return others?.total ?? "0";
}

/** What the `amount_mismatch` facts of an operation add up to, as text. */
export async function mismatchTotal(tx: Tx, operationId: string): Promise<string> {
  const [recorded] = await tx<{ total: string }[]>`
    select coalesce(sum(amount), 0)::text as total from operations.provider_facts
    where operation_id = ${operationId} and kind = 'amount_mismatch'`;
  return recorded?.total ?? "0";
}
