import type { RequestColumns } from "../domain/create-request.ts";
import type { EventStatements } from "../domain/events.ts";
import type { Applied, Fact, LifecyclePatch } from "../domain/lifecycle/apply.ts";
import type { LegRow, OperationRow, ReconcileRow } from "../domain/model.ts";
import type { ProviderConfig } from "../domain/providers.ts";
import type { Audit } from "./audit.ts";
import type { Db, Tx } from "./db.ts";
import type { HandOffs } from "./handoffs.ts";
import type { Links } from "./links.ts";
import type { OperatorQueue } from "./operator-queue.ts";
import type { ProviderFacts } from "./provider-facts.ts";
import type { ShopPages } from "./shop-pages.ts";
import type { Withdrawals } from "./withdrawals.ts";

export interface Route {
  payin: string[];
  payout: string[];
  settlementCurrency: string;
}

/** A route with the configs of its providers for one direction, in route order. */
export interface RouteWithProviders {
  route: Route;
  providers: (ProviderConfig | undefined)[];
  names: string[];
  /** The routing configuration's version it was read at (`operations.config_version`; null: no row). */
  configVersion: string | null;
}

/** What a create's claim (`OperationStore.claim`) writes: the row in `routing` but its deadline. */
export type ClaimRow = RequestColumns &
  Pick<
    OperationRow,
    | "settlement_currency"
    | "fx_rate"
    | "fx_source"
    | "commission_percent"
    | "commission_fixed"
    | "pricing_version"
  >;

/** What `claim` answers: see `OperationStoreCore.claim`. */
export interface ClaimOutcome {
  claimed?: OperationRow;
  existing?: OperationRow;
  linkHoldsKey: boolean;
  configStale: boolean;
}

/** What a create reads before it claims its key: see `OperationStoreCore.createContext`. */
export interface CreateContext {
  existing: OperationRow | undefined;
  routing: RouteWithProviders | undefined;
  deadline: Date;
  linkHoldsKey: boolean;
}

/** A row `insert` writes: the key columns, the rest at their defaults unless given. */
export type InsertRow = Partial<OperationRow> &
  Partial<Pick<ReconcileRow, "next_check_at" | "reconcile_checks" | "stuck_alerted_at">> &
  Pick<OperationRow, "id" | "shop_id" | "merchant_id" | "merchant_operation_id" | "type" | "status">;

/** A registered provider as the admin reads list it, without its credentials. */
export interface ProviderSummary {
  name: string;
  kind: string;
  base_url: string;
  methods: string[];
  updated_at: string;
}

/** One of a shop's routes as the admin reads list it. */
export interface RouteSummary {
  method: string;
  payin: string[];
  payout: string[];
  settlement_currency: string;
  updated_at: string;
}

/** A recorded leg with its provider, for operators. */
export interface ProviderLeg {
  id: string;
  provider: string;
  provider_leg_id: string;
  amount: string;
  completed_at: Date;
  receipt_id: string | null;
}

/** A leg `insertLeg` records. */
export interface NewLeg {
  id: string;
  operationId: string;
  provider: string;
  providerLegId: string;
  amount: string;
  completedAt: string;
  receiptId?: string | null;
}

/** Columns a transition may change. */
export type OperationPatch = Partial<
  Omit<
    OperationRow,
    "id" | "shop_id" | "merchant_id" | "merchant_operation_id" | "version" | "created_at" | "updated_at"
  >
>;

/**
 * Columns a caller may write with a fact (`applyFact`'s `data`): never the lifecycle's
 * own (status, provider, amounts, cancel and review columns), which only the fact sets.
 */
export type DataPatch = Omit<OperationPatch, keyof LifecyclePatch>;

/** What `applyFact` takes besides the row and the fact. */
export interface ApplyOptions {
  tx?: Tx;
  data?: DataPatch;
  statements?: EventStatements;
}

/** Statuses the reconciler looks at: the create did not finish, or the provider has not answered. */
export const UNSETTLED = ["routing", "pending", "awaiting_confirmation"] as const;
/** Every non-terminal status; an operation in one of them too long is reported as stuck. */
export const NON_TERMINAL = [...UNSETTLED, "manual_check"] as const;

/**
 * The operations rows, their legs, the routing configuration and the reconciler's queue:
 * what both stores implement (`PgOperationStore` on Postgres, `MemoryOperationStore` in
 * memory) and `store.contract.ts` checks on both. A status changes only through
 * `applyFact`, as the lifecycle (lifecycle/apply.ts) decides; every write of a row is
 * version-checked (undefined: the version moved on, re-read and decide). "Now" is the
 * store's clock (the database's, for Postgres), never the caller's.
 */
export interface OperationStoreCore {
  /** The events prefix, for the other outbox rows written in this schema (provider facts). */
  readonly prefix: string;
  /** Calls `onNotify` on each notification of `channel`; resolves the function that stops listening. */
  listen(channel: string, onNotify: () => void): Promise<() => Promise<void>>;
  /** Runs `fn` in one transaction; the methods taking a `tx` join it. */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * Queues an event in `tx` besides the one a lifecycle write queues with its own
   * statement (a refused create's internal event): published after commit.
   */
  enqueue(tx: Tx, event: { id: string; subject: string; payload: Uint8Array }): Promise<void>;
  /**
   * Records a provider callback as seen; false when it was recorded before (a replay,
   * applied then). Inside the transaction that applies it, so a refused apply forgets it.
   */
  recordCallback(
    tx: Tx,
    callback: { provider: string; callbackId: string; operationId: string },
  ): Promise<boolean>;

  findByMop(shopId: string, mop: string, tx?: Db): Promise<OperationRow | undefined>;
  findById(shopId: string, id: string, tx?: Db): Promise<OperationRow | undefined>;
  findAnyById(id: string, tx?: Db): Promise<OperationRow | undefined>;
  /** Every operation with this merchant_operation_id, whatever its shop, newest first (operators' search). */
  findAnyByMop(mop: string, limit: number): Promise<OperationRow[]>;
  /** Payments waiting for an operator (manual_check), oldest first; of one shop when given. */
  manualChecks(limit: number, shopId?: string): Promise<OperationRow[]>;
  /** Locks the row for the rest of the transaction. */
  lock(id: string, tx: Tx): Promise<OperationRow | undefined>;
  /** An operation's legs, in completion order. */
  legs(operationId: string, tx?: Db): Promise<LegRow[]>;
  /** An operation's legs with their providers, for operators. */
  providerLegs(operationId: string): Promise<ProviderLeg[]>;

  /** Every registered provider, by name, without its credentials. */
  listProviders(): Promise<ProviderSummary[]>;
  /** A shop's routes, by method. */
  listRoutes(shopId: string): Promise<RouteSummary[]>;
  /** The route and the configs of its providers for one direction, in route order. */
  routeWithProviders(
    shopId: string,
    method: string,
    direction: "payin" | "payout",
  ): Promise<RouteWithProviders | undefined>;
  /** A registered provider, or the built-in one of that name (the pool). */
  provider(name: string): Promise<ProviderConfig | undefined>;
  putProvider(p: ProviderConfig): Promise<void>;
  putRoute(shopId: string, method: string, route: Route): Promise<void>;

  /** The credential hash and status of the flexible link a payment was created through, if any. */
  flexibleLinkOf(operationId: string): Promise<{ k_hash: string; status: string } | undefined>;
  /** Whether `id` is the payment of a flexible link (whose refusals keep their own rules). */
  isFlexiblePayment(id: string): Promise<boolean>;
  /** Records that a payment was handed out as a hosted link: no version bump, no event. */
  markHostedPage(operationId: string): Promise<void>;

  /**
   * What a create reads before it claims its key, at once: the row already under (shop,
   * merchant_operation_id) if any, the route with its providers, the routing deadline
   * `budgetMs` ahead by the store's clock, and whether a flexible link holds the key.
   */
  createContext(
    shopId: string,
    mop: string,
    method: string,
    direction: "payin" | "payout",
    budgetMs: number,
  ): Promise<CreateContext>;
  /**
   * Inserts a new row unless (shop, merchant_operation_id), or its id, already has one;
   * returns the inserted row, or undefined when another request got there first.
   */
  insert(row: InsertRow): Promise<OperationRow | undefined>;
  /**
   * A create's claim of its key, at once: inserts `row` in `routing`, with its routing
   * deadline `budgetMs` ahead by the store's clock, unless the key has a row already
   * (`existing`), a flexible link holds the key (`linkHoldsKey`; the link's own payment,
   * `forLink`, claims it all the same), or the routing configuration is no longer at
   * `configVersion` or has no version at all (`configStale`). None of `claimed`,
   * `existing` and `configStale`: a link holds the key.
   */
  claim(
    row: ClaimRow,
    options: { budgetMs: number; forLink: boolean; configVersion: string | null },
  ): Promise<ClaimOutcome>;
  /**
   * Applies a lifecycle fact to `before` (read, or locked, by the caller): records the
   * legs the fact adds and writes its change with its event (and, on a completion, the
   * receipts) atomically. `data` adds columns that are not the lifecycle's, `statements`
   * what its event states beyond the row. Throws the fact's `DomainError`; returns the row
   * after (the same row when nothing changes), or undefined when the version moved on.
   */
  applyFact(
    before: OperationRow,
    fact: Fact,
    options?: ApplyOptions,
  ): Promise<{ row: OperationRow | undefined; applied: Applied }>;
  /** Records a completed part of an operation, once per (operation, provider leg id). */
  insertLeg(tx: Tx, leg: NewLeg): Promise<void>;
  /** `ms` milliseconds from now by the store's clock: the deadline a create stores for other replicas. */
  deadlineIn(ms: number): Promise<Date>;
  /**
   * Takes over a `routing` row whose driver is gone: only when its deadline plus
   * `graceMs` has passed; moves the deadline `budgetMs` ahead, version-checked.
   */
  takeOverRouting(before: OperationRow, budgetMs: number, graceMs: number): Promise<OperationRow | undefined>;
  /**
   * Takes a refused create back to `routing` for a retried create, version-checked;
   * `created_at` and the reconciler's bookkeeping restart.
   */
  reopen(before: OperationRow, data: DataPatch): Promise<OperationRow | undefined>;

  /**
   * Leases up to `limit` operations due for reconciliation by pushing their
   * `next_check_at` to the end of the lease as they are picked; a leased row is not
   * picked again while the lease runs. Due: `pending`/`awaiting_confirmation` past
   * `next_check_at` or, before the first check, `expires_at` or `created_at + afterMs`,
   * whichever comes first; `routing` past `routing_deadline + routingGraceMs` with no
   * lease running. Bookkeeping: the version and `updated_at` stay.
   */
  claimDue(options: {
    afterMs: number;
    routingGraceMs: number;
    leaseMs: number;
    limit: number;
  }): Promise<ReconcileRow[]>;
  /**
   * Sets when the reconciler looks at the row again: `delayMs` from now, but never after
   * a future `expires_at`; `null` returns it to the ordinary due rule. `counted` records
   * one more question to the provider.
   */
  scheduleCheck(id: string, delayMs: number | null, counted: boolean): Promise<void>;
  /** Marks operations non-terminal for longer than `afterMs` as alerted and returns them, each once. */
  markStuck(afterMs: number, limit: number): Promise<ReconcileRow[]>;
  /** How many operations have been non-terminal for longer than `afterMs`, per status. */
  countStuck(afterMs: number): Promise<Map<string, number>>;
}

/**
 * What a create (and whoever drives its routing) reads and writes: the core and the
 * withdrawals of payins it passes over. Both stores keep it (`PgOperationStore`,
 * `MemoryOperationStore`).
 */
export interface CreateStore extends OperationStoreCore {
  /** `operations.withdrawals`: the withdrawals of cancelled and passed-over payins. */
  readonly withdrawals: Withdrawals;
}

/**
 * Every read and write of the operations schema the service depends on: the core, and
 * the side tables' repositories (Postgres, and in memory for the unit tier).
 */
export interface OperationStore extends CreateStore {
  /** `operations.pool_handoffs`: the hand-offs of pool payouts' remainders. */
  readonly handoffs: HandOffs;
  /** `operations.flexible_links`: flexible payment links. */
  readonly links: Links;
  /** `operations.provider_facts`, outside a caller's transaction (the rest: ./provider-facts.ts). */
  readonly facts: ProviderFacts;
  /** The admin audit reads. */
  readonly audit: Audit;
  /** Payouts unresolved past the horizon, for an operator (`operator_queued_at`). */
  readonly operatorQueue: OperatorQueue;
  /** `operations.shop_pages`: how the payer's page presents each shop. */
  readonly shopPages: ShopPages;
}
