import { Decimal } from "@gw/money";
import {
  FACT_DIRECTIONS,
  FACT_KINDS,
  FACT_MACHINE,
  FACT_RESOLUTIONS,
} from "../../domain/provider-fact-states.ts";
import { assertMove } from "../../domain/state-machine.ts";
import type { Tx } from "../db.ts";
import {
  type FactFilter,
  type FactResolution,
  type FactRow,
  type NewFact,
  type ProviderFacts,
  RESOLVE_FROM,
} from "../provider-facts.ts";
import type { StoredFact } from "./state.ts";
import type { MemoryAccess } from "./withdrawals.ts";

const copy = (f: StoredFact): FactRow => ({ ...f });
/** A numeric column at its scale, as Postgres stores it (null stays null). */
const scaled = (v: string | null, scale: number) => (v === null ? null : new Decimal(v).toFixed(scale));

/** The table's CHECKs on a row about to be written. */
function checked(f: StoredFact): StoredFact {
  const violates = (name: string) => {
    throw new Error(`new row for provider_facts violates check constraint "${name}" (${f.id})`);
  };
  if (f.amount !== null && new Decimal(f.amount).lte(0)) violates("provider_facts_amount");
  if (!(FACT_KINDS as readonly string[]).includes(f.kind)) violates("provider_facts_kind");
  if (!(FACT_DIRECTIONS as readonly string[]).includes(f.direction)) violates("provider_facts_direction");
  if (f.resolution !== null && !(FACT_RESOLUTIONS as readonly string[]).includes(f.resolution))
    violates("provider_facts_resolution");
  return f;
}

/**
 * `operations.provider_facts` in memory, the statements of `ProviderFactRepository` and of
 * `insertFact`, `lockFact`, `markFactResolved` and `mismatchTotal`
 * (repository/provider-facts.ts): a fact recorded once per (provider, reference,
 * fact_key), `open`; resolved only from a state the fact table (`RESOLVE_FROM`) resolves
 * from, else a `StateMoveRefusedError`; listed open first, then the newest. Timestamps
 * by the store's clock, numerics at the column's scale. Transactions run one at a time,
 * so `lock` is a read in `tx`. Rows never change in place.
 */
export class MemoryProviderFacts implements ProviderFacts {
  readonly #m: MemoryAccess;

  constructor(access: MemoryAccess) {
    this.#m = access;
  }

  async countOpen(): Promise<{ kind: string; n: number }[]> {
    const counts = new Map<string, number>();
    for (const f of this.#m.read().facts.values())
      if (f.status === "open") counts.set(f.kind, (counts.get(f.kind) ?? 0) + 1);
    return [...counts].map(([kind, n]) => ({ kind, n }));
  }

  async list(options: FactFilter): Promise<FactRow[]> {
    return [...this.#m.read().facts.values()]
      .filter(
        (f) =>
          (!options.status || f.status === options.status) &&
          (!options.operationId || f.operation_id === options.operationId),
      )
      .sort(
        (a, b) =>
          Number(b.status === "open") - Number(a.status === "open") ||
          b.created_at.getTime() - a.created_at.getTime() ||
          (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
      )
      .slice(0, options.limit)
      .map(copy);
  }

  insert(tx: Tx, fact: NewFact): Promise<FactRow | undefined> {
    return this.#m.write(tx, (s) => {
      for (const f of s.facts.values())
        if (f.provider === fact.provider && f.reference === fact.reference && f.fact_key === fact.fact_key)
          return undefined;
      if (s.facts.has(fact.id))
        throw new Error(`duplicate key value violates unique constraint "provider_facts_pkey" (${fact.id})`);
      const row = checked({
        ...fact,
        amount: scaled(fact.amount, 2),
        status: FACT_MACHINE.initial,
        resolution: null,
        resolved_by: null,
        resolution_reason: null,
        settlement_amount: null,
        commission_amount: null,
        settlement_currency: null,
        resolved_at: null,
        created_at: this.#m.clock(),
      });
      s.facts.set(row.id, row);
      return copy(row);
    });
  }

  lock(tx: Tx, id: string): Promise<FactRow | undefined> {
    return this.#m.write(tx, (s) => {
      const f = s.facts.get(id);
      return f && copy(f);
    });
  }

  markResolved(tx: Tx, id: string, resolution: FactResolution): Promise<FactRow | undefined> {
    return this.#m.write(tx, (s) => {
      const found = s.facts.get(id);
      if (!found) return undefined;
      if (!RESOLVE_FROM.includes(found.status)) {
        assertMove(FACT_MACHINE, found.status, "resolved", undefined, id);
        return undefined;
      }
      const { figures } = resolution;
      const row = checked({
        ...found,
        status: "resolved",
        resolution: resolution.action,
        resolved_by: resolution.operator,
        resolution_reason: resolution.reason,
        resolved_at: this.#m.clock(),
        settlement_amount: scaled(figures?.settlement ?? null, 6),
        commission_amount: scaled(figures?.commission ?? null, 6),
        settlement_currency: figures?.currency ?? null,
      });
      s.facts.set(id, row);
      return copy(row);
    });
  }

  mismatchTotal(tx: Tx, operationId: string): Promise<string> {
    return this.#m.write(tx, (s) => {
      const amounts = [...s.facts.values()]
        .filter((f) => f.operation_id === operationId && f.kind === "amount_mismatch" && f.amount !== null)
        .map((f) => new Decimal(f.amount ?? 0));
      return amounts.length === 0 ? "0" : amounts.reduce((a, b) => a.plus(b)).toFixed(2);
    });
  }
}
