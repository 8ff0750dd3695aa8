import { Decimal } from "@gw/money";
import type { HandOffState } from "../../domain/handoff-states.ts";
import type { ReconcileRow } from "../../domain/model.ts";
import type { ProviderConfig } from "../../domain/providers.ts";
import type { WithdrawalState } from "../../domain/withdrawal-states.ts";
import type { LinkRow } from "../links.ts";
import type { FactRow } from "../provider-facts.ts";
import type { ShopPage } from "../shop-pages.ts";
import type { InsertRow, OperationPatch, ProviderLeg, Route } from "../store.ts";

/** An `operations.operations` row as the memory store keeps it: every column, the bookkeeping too. */
export type StoredRow = ReconcileRow;

/** An `operations.legs` row. */
export type StoredLeg = ProviderLeg & { operation_id: string };

/** The flexible link holding a key, as far as the core reads it (the links themselves are not kept here). */
export interface LinkKey {
  operationId: string;
  shopId: string;
  merchantOperationId: string;
  kHash: string;
  status: string;
}

/** One event queued in the outbox, as the relay would publish it. */
export interface QueuedEvent {
  id: string;
  subject: string;
  payload: Uint8Array;
}

/**
 * Everything the memory store keeps. Its values are never changed in place (a write puts
 * a new row, a new leg list), so a transaction's copy is a copy of the maps.
 */
export interface State {
  rows: Map<string, StoredRow>;
  /** (shop, merchant_operation_id) → id: the unique key that settles idempotency. */
  keys: Map<string, string>;
  legs: Map<string, readonly StoredLeg[]>;
  callbacks: Set<string>;
  outbox: QueuedEvent[];
  routes: Map<string, Route & { updatedAt: Date }>;
  providers: Map<string, ProviderConfig & { updatedAt: Date }>;
  /** `operations.config_version`: raised by every write of routes or providers; null: no row. */
  configVersion: bigint | null;
  links: Map<string, LinkKey>;
  /** `operations.withdrawals`, by (operation, provider). */
  withdrawals: Map<string, StoredWithdrawal>;
  /** `operations.flexible_links`, by operation id (`links` above keeps the keys they hold, for the core). */
  flexibleLinks: Map<string, StoredLink>;
  /** `operations.shop_pages`, by shop. */
  shopPages: Map<string, StoredShopPage>;
  /** `operations.pool_handoffs`, by operation. */
  handoffs: Map<string, StoredHandOff>;
  /** `operations.provider_facts`, by id. */
  facts: Map<string, StoredFact>;
}

/** An `operations.flexible_links` row, its claim's columns too. */
export type StoredLink = LinkRow & {
  claimed_until: Date | null;
  slot_released_at: Date | null;
  created_at: Date;
  updated_at: Date;
};

/** An `operations.shop_pages` row. */
export type StoredShopPage = ShopPage & { updated_at: Date };

/** An `operations.withdrawals` row. */
export interface StoredWithdrawal {
  operation_id: string;
  provider: string;
  passed_over: boolean;
  status: WithdrawalState;
  attempts: number;
  next_attempt_at: Date;
  last_error: string | null;
  updated_at: Date;
}

/** An `operations.pool_handoffs` row. */
export interface StoredHandOff {
  operation_id: string;
  /** As Postgres answers `amount::text` (`numeric(20, 2)`: "10.00"). */
  amount: string;
  candidates: readonly string[];
  position: number;
  attempts: number;
  status: HandOffState;
  provider: string | null;
  next_attempt_at: Date;
  created_at: Date;
  updated_at: Date;
}

/** An `operations.provider_facts` row, its timestamps as Dates. */
export type StoredFact = Omit<FactRow, "created_at" | "resolved_at"> & {
  created_at: Date;
  resolved_at: Date | null;
};

export const emptyState = (): State => ({
  rows: new Map(),
  keys: new Map(),
  legs: new Map(),
  callbacks: new Set(),
  outbox: [],
  routes: new Map(),
  providers: new Map(),
  configVersion: 1n,
  links: new Map(),
  withdrawals: new Map(),
  flexibleLinks: new Map(),
  shopPages: new Map(),
  handoffs: new Map(),
  facts: new Map(),
});

export const copyState = (s: State): State => ({
  rows: new Map(s.rows),
  keys: new Map(s.keys),
  legs: new Map(s.legs),
  callbacks: new Set(s.callbacks),
  outbox: [...s.outbox],
  routes: new Map(s.routes),
  providers: new Map(s.providers),
  configVersion: s.configVersion,
  links: new Map(s.links),
  withdrawals: new Map(s.withdrawals),
  flexibleLinks: new Map(s.flexibleLinks),
  shopPages: new Map(s.shopPages),
  handoffs: new Map(s.handoffs),
  facts: new Map(s.facts),
});

export const keyOf = (shopId: string, mop: string) => `${shopId}\u0000${mop}`;
export const routeKey = (shopId: string, method: string) => `${shopId}\u0000${method}`;

/** The numeric columns and their scales, as Postgres answers them (`numeric(20, 2)`: "1000.00"). */
const SCALES = {
  expected_amount: 2,
  actual_amount: 2,
  fx_rate: 12,
  commission_percent: 4,
  commission_fixed: 6,
} as const;

/** `patch` with its numbers as the database stores them (numerics at their scale, bigints as text). */
export function normalized<T extends Partial<StoredRow>>(patch: T): T {
  const out: Record<string, unknown> = { ...patch };
  for (const [column, scale] of Object.entries(SCALES))
    if (out[column] != null) out[column] = new Decimal(out[column] as string).toFixed(scale);
  if (out.pricing_version != null) out.pricing_version = String(out.pricing_version);
  if (out.version != null) out.version = String(out.version);
  return out as T;
}

/** `operations_amounts`: the check the table keeps on every write. */
export function checkAmounts(row: StoredRow): void {
  if (
    new Decimal(row.actual_amount).lt(0) ||
    (row.expected_amount !== null && new Decimal(row.expected_amount).lte(0))
  )
    throw new Error(`new row for operations violates check constraint "operations_amounts" (${row.id})`);
}

/** A new row: `row` over the table's defaults, at `now`. */
export function newRow(row: InsertRow, now: Date): StoredRow {
  const defaults: StoredRow = {
    id: row.id,
    shop_id: row.shop_id,
    merchant_id: row.merchant_id,
    merchant_operation_id: row.merchant_operation_id,
    request_hash: null,
    type: row.type,
    status: row.status,
    method: null,
    currency: null,
    expected_amount: null,
    actual_amount: "0.00",
    client_id: null,
    client_ip: null,
    number: null,
    name: null,
    bankname: null,
    provider: null,
    receipt_required: false,
    expires_at: null,
    settlement_currency: null,
    fx_rate: null,
    fx_source: null,
    commission_percent: null,
    commission_fixed: null,
    pricing_version: null,
    manual_check_reason: null,
    review_started_at: null,
    hosted_page: false,
    cancel_requested: false,
    cancelled_by_command: false,
    cancel_reason: null,
    routing_deadline: null,
    routing_passed: [],
    routing_unresolved: null,
    next_check_at: null,
    reconcile_checks: 0,
    stuck_alerted_at: null,
    operator_queued_at: null,
    version: "0",
    created_at: now,
    updated_at: now,
  };
  const stored = normalized({ ...defaults, ...row });
  checkAmounts(stored);
  return stored;
}

/** A row as a read answers it: a copy the caller may change. */
export const copyRow = (row: StoredRow): StoredRow => ({ ...row, routing_passed: [...row.routing_passed] });

/** `row` with `patch` written over it, checked as the table checks. */
export function patched(row: StoredRow, patch: OperationPatch | Partial<StoredRow>): StoredRow {
  const next = { ...row, ...normalized(patch) } as StoredRow;
  checkAmounts(next);
  return next;
}

const at = (base: Date, ms: number) => new Date(base.getTime() + ms);
/** SQL's `least`, which skips nulls. */
const least = (...dates: (Date | null)[]) =>
  dates.reduce<Date | null>((m, d) => (d === null ? m : m === null || d < m ? d : m), null);

/** Whether the reconciler's `claimDue` picks `row` at `now` (the rule in `OperationStoreCore.claimDue`). */
export function isDue(
  row: StoredRow,
  now: Date,
  options: { afterMs: number; routingGraceMs: number },
): boolean {
  if (row.status === "routing")
    return (
      at(row.routing_deadline ?? row.created_at, options.routingGraceMs) <= now &&
      (row.next_check_at === null || row.next_check_at <= now)
    );
  if (row.status !== "pending" && row.status !== "awaiting_confirmation") return false;
  const due = row.next_check_at ?? least(row.expires_at, at(row.created_at, options.afterMs));
  return due !== null && due <= now;
}

/** When `scheduleCheck` sets the next look: `delayMs` from `now`, never after a future `expires_at`. */
export function nextCheck(row: StoredRow, delayMs: number | null, now: Date): Date | null {
  if (delayMs === null) return null;
  return least(at(now, delayMs), row.expires_at !== null && row.expires_at > now ? row.expires_at : null);
}

export { at };
