import { Decimal } from "@gw/money";
import type { LegRow, OperationRow } from "../../domain/model.ts";
import { builtInProvider } from "../../domain/providers.ts";
import { reopenPatch } from "../guard.ts";
import {
  type ClaimOutcome,
  type ClaimRow,
  type DataPatch,
  NON_TERMINAL,
  type RouteWithProviders,
} from "../store.ts";
import {
  at,
  copyRow,
  isDue,
  keyOf,
  newRow,
  nextCheck,
  patched,
  routeKey,
  type State,
  type StoredLeg,
  type StoredRow,
} from "./state.ts";

/** The memory store's statements: each a function of the state it runs on and "now". */

export const nextVersion = (row: Pick<OperationRow, "version">) => String(BigInt(row.version) + 1n);

export function rowOf(s: State, id: string): StoredRow | undefined {
  const row = s.rows.get(id);
  return row && copyRow(row);
}

export function put(s: State, row: StoredRow): StoredRow {
  s.rows.set(row.id, row);
  return copyRow(row);
}

/** Inserts `row` unless its id or its (shop, merchant_operation_id) has a row: `on conflict do nothing`. */
export function insertIn(s: State, row: StoredRow): OperationRow | undefined {
  const key = keyOf(row.shop_id, row.merchant_operation_id);
  if (s.rows.has(row.id) || s.keys.has(key)) return undefined;
  s.rows.set(row.id, row);
  s.keys.set(key, row.id);
  return copyRow(row);
}

/** Records a leg unless its id or its (operation, provider leg id) is recorded already. */
export function addLeg(s: State, leg: StoredLeg): void {
  const legs = s.legs.get(leg.operation_id) ?? [];
  if (legs.some((l) => l.provider_leg_id === leg.provider_leg_id || l.id === leg.id)) return;
  const amount = new Decimal(leg.amount);
  if (amount.lte(0)) throw new Error(`new row for legs violates check constraint "legs_positive"`);
  const sorted = [...legs, { ...leg, amount: amount.toFixed(2) }].sort(
    (a, b) => a.completed_at.getTime() - b.completed_at.getTime() || (a.id < b.id ? -1 : 1),
  );
  s.legs.set(leg.operation_id, sorted);
}

export function legRows(s: State, operationId: string): LegRow[] {
  return (s.legs.get(operationId) ?? []).map((l) => ({
    id: l.id,
    amount: l.amount,
    completed_at: l.completed_at,
    receipt_id: l.receipt_id,
  }));
}

export function linkHolds(s: State, shopId: string, mop: string): boolean {
  for (const l of s.links.values()) if (l.shopId === shopId && l.merchantOperationId === mop) return true;
  return false;
}

export function routeIn(
  s: State,
  shopId: string,
  method: string,
  direction: "payin" | "payout",
): RouteWithProviders | undefined {
  const r = s.routes.get(routeKey(shopId, method));
  if (!r) return undefined;
  const names = direction === "payin" ? r.payin : r.payout;
  return {
    route: { payin: [...r.payin], payout: [...r.payout], settlementCurrency: r.settlementCurrency },
    providers: names.map((n) => {
      const p = s.providers.get(n);
      if (!p) return builtInProvider(n);
      const { updatedAt: _, ...config } = p;
      return config;
    }),
    names: [...names],
    configVersion: s.configVersion === null ? null : String(s.configVersion),
  };
}

/** `OperationStoreCore.claim`: the guard, the insert and the answer as the one Postgres statement has them. */
export function claimIn(
  s: State,
  now: Date,
  row: ClaimRow,
  options: { budgetMs: number; forLink: boolean; configVersion: string | null },
): ClaimOutcome {
  const holds = linkHolds(s, row.shop_id, row.merchant_operation_id);
  const stale =
    options.configVersion === null ||
    s.configVersion === null ||
    String(s.configVersion) !== options.configVersion;
  const claimed =
    (options.forLink || !holds) && !stale
      ? insertIn(s, newRow({ ...row, status: "routing", routing_deadline: at(now, options.budgetMs) }, now))
      : undefined;
  const id = claimed ? undefined : s.keys.get(keyOf(row.shop_id, row.merchant_operation_id));
  const existing = id === undefined ? undefined : rowOf(s, id);
  return {
    ...(claimed ? { claimed } : existing ? { existing } : {}),
    linkHoldsKey: holds,
    configStale: stale,
  };
}

export function takeOverIn(
  s: State,
  now: Date,
  before: OperationRow,
  budgetMs: number,
  graceMs: number,
): OperationRow | undefined {
  const row = s.rows.get(before.id);
  if (!row || row.version !== before.version || row.status !== "routing") return undefined;
  if (at(row.routing_deadline ?? row.created_at, graceMs) > now) return undefined;
  return put(
    s,
    patched(row, { routing_deadline: at(now, budgetMs), version: nextVersion(row), updated_at: now }),
  );
}

export function reopenIn(
  s: State,
  now: Date,
  before: OperationRow,
  data: DataPatch,
): OperationRow | undefined {
  const patch = reopenPatch(before, data);
  const row = s.rows.get(before.id);
  if (!row || row.version !== before.version) return undefined;
  return put(
    s,
    patched(row, {
      ...patch,
      version: nextVersion(row),
      created_at: now,
      updated_at: now,
      next_check_at: null,
      reconcile_checks: 0,
      stuck_alerted_at: null,
    }),
  );
}

export function claimDueIn(
  s: State,
  now: Date,
  options: { afterMs: number; routingGraceMs: number; leaseMs: number; limit: number },
): StoredRow[] {
  const order = (r: StoredRow) => (r.next_check_at ?? r.created_at).getTime();
  return [...s.rows.values()]
    .filter((r) => isDue(r, now, options))
    .sort((a, b) => order(a) - order(b))
    .slice(0, options.limit)
    .map((r) => put(s, { ...r, next_check_at: at(now, options.leaseMs) }));
}

export function scheduleIn(s: State, now: Date, id: string, delayMs: number | null, counted: boolean): void {
  const row = s.rows.get(id);
  if (!row) return;
  const next_check_at = nextCheck(row, delayMs, now);
  s.rows.set(id, { ...row, next_check_at, reconcile_checks: row.reconcile_checks + (counted ? 1 : 0) });
}

/** Rows non-terminal since longer than `afterMs` before `now`. */
export function stuckIn(s: State, now: Date, afterMs: number): StoredRow[] {
  const cutoff = at(now, -afterMs);
  const statuses: readonly string[] = NON_TERMINAL;
  return [...s.rows.values()].filter((r) => statuses.includes(r.status) && r.created_at <= cutoff);
}

export function markStuckIn(s: State, now: Date, afterMs: number, limit: number): StoredRow[] {
  return stuckIn(s, now, afterMs)
    .filter((r) => r.stuck_alerted_at === null)
    .slice(0, limit)
    .map((r) => put(s, { ...r, stuck_alerted_at: now }));
}
