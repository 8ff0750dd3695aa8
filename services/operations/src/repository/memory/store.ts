import { AsyncLocalStorage } from "node:async_hooks";
import type { EventStatements } from "../../domain/events.ts";
import type { Applied, Fact } from "../../domain/lifecycle/apply.ts";
import type { LegRow, OperationRow, ReconcileRow } from "../../domain/model.ts";
import type { ProviderConfig } from "../../domain/providers.ts";
import { builtInProvider } from "../../domain/providers.ts";
import type { Db, Tx } from "../db.ts";
import type {
  ApplyOptions,
  ClaimOutcome,
  ClaimRow,
  CreateContext,
  DataPatch,
  InsertRow,
  NewLeg,
  OperationPatch,
  OperationStore,
  ProviderLeg,
  ProviderSummary,
  Route,
  RouteSummary,
  RouteWithProviders,
} from "../store.ts";
import { MemoryAudit } from "./audit.ts";
import { MemoryHandOffs } from "./handoffs.ts";
import { applyFactIn, type Scope, transitionIn } from "./lifecycle.ts";
import { MemoryLinks } from "./links.ts";
import { MemoryOperatorQueue } from "./operator-queue.ts";
import { MemoryProviderFacts } from "./provider-facts.ts";
import { MemoryShopPages } from "./shop-pages.ts";
import {
  at,
  copyRow,
  copyState,
  emptyState,
  keyOf,
  type LinkKey,
  newRow,
  type QueuedEvent,
  routeKey,
  type State,
} from "./state.ts";
import * as t from "./tables.ts";
import { type MemoryAccess, MemoryWithdrawals } from "./withdrawals.ts";

/**
 * The operations store in memory, for tests that need no database: the same contract
 * (store.contract.ts) as `PgOperationStore`, the same lifecycle (`apply`, the table's
 * guard, the legs' check) deciding every change. Transactions run one at a time, each on
 * its own copy of the state, kept on commit and dropped when `fn` throws; so a `lock`
 * holds until its transaction ends. A write without a `tx` is a transaction of its own;
 * a read without one sees what is committed. "Now" is `clock()`. Where Postgres would
 * let a write without the `tx` from inside an open transaction run on another
 * connection, this store would wait for itself: it throws instead.
 * It keeps every side table too (withdrawals, flexible links, hand-offs, provider facts,
 * shop pages, the operator queue and the audit reads), each held to the same contract
 * as its Postgres repository (test/contracts/).
 */
export class MemoryOperationStore implements OperationStore {
  readonly prefix: string;
  readonly #clock: () => Date;
  #state: State = emptyState();
  #tail: Promise<unknown> = Promise.resolve();
  readonly #open = new WeakMap<object, State>();
  readonly #inside = new AsyncLocalStorage<object>();
  readonly #listeners = new Map<string, Set<() => void>>();
  readonly #access: MemoryAccess = {
    write: (tx, fn) => this.#write(tx as Tx | undefined, fn),
    read: () => this.#state,
    clock: () => this.#clock(),
  };
  readonly withdrawals = new MemoryWithdrawals(this.#access);
  readonly links = new MemoryLinks(this.#access);
  readonly shopPages = new MemoryShopPages(this.#access);
  readonly operatorQueue = new MemoryOperatorQueue(this.#access);
  readonly audit = new MemoryAudit(this.#access);
  readonly facts = new MemoryProviderFacts(this.#access);
  readonly handoffs = new MemoryHandOffs({
    ...this.#access,
    notify: (channel) => {
      for (const notify of this.#listeners.get(channel) ?? []) notify();
    },
  });

  constructor(prefix = "memory", options: { clock?: () => Date } = {}) {
    this.prefix = prefix;
    this.#clock = options.clock ?? (() => new Date());
  }

  /** The events queued so far (committed), oldest first. */
  outbox(): readonly QueuedEvent[] {
    return this.#state.outbox;
  }

  /** Records that a flexible link holds (shop, merchant_operation_id), as `LinkRepository` would. */
  holdKeyForLink(link: LinkKey): void {
    this.#state.links.set(link.operationId, link);
  }

  async listen(channel: string, onNotify: () => void): Promise<() => Promise<void>> {
    const set = this.#listeners.get(channel) ?? new Set();
    this.#listeners.set(channel, set);
    set.add(onNotify);
    return async () => void set.delete(onNotify);
  }

  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    this.#refuseInside("a transaction");
    const run = this.#tail.then(async () => {
      const work = copyState(this.#state);
      // A tagged template on it (SQL meant for Postgres) throws.
      const token = Object.freeze(() => {
        throw new Error("MemoryOperationStore: a memory transaction runs no SQL");
      });
      this.#open.set(token, work);
      try {
        const out = await this.#inside.run(token, () => fn(token as unknown as Tx));
        const queued = work.outbox.length > this.#state.outbox.length;
        this.#state = work;
        if (queued) for (const notify of this.#listeners.get("outbox_operations") ?? []) notify();
        return out;
      } finally {
        this.#open.delete(token);
      }
    });
    this.#tail = run.catch(() => undefined);
    return run;
  }

  async enqueue(tx: Tx, event: QueuedEvent): Promise<void> {
    const { id, subject, payload } = event;
    this.#in(tx).outbox.push({ id, subject, payload });
  }

  async recordCallback(tx: Tx, callback: { provider: string; callbackId: string; operationId: string }) {
    const s = this.#in(tx);
    const key = `${callback.provider}\u0000${callback.callbackId}`;
    if (s.callbacks.has(key)) return false;
    s.callbacks.add(key);
    return true;
  }

  async findByMop(shopId: string, mop: string, tx?: Db): Promise<OperationRow | undefined> {
    const s = this.#read(tx);
    const id = s.keys.get(keyOf(shopId, mop));
    return id === undefined ? undefined : t.rowOf(s, id);
  }

  async findById(shopId: string, id: string, tx?: Db): Promise<OperationRow | undefined> {
    const row = t.rowOf(this.#read(tx), id);
    return row?.shop_id === shopId ? row : undefined;
  }

  async findAnyById(id: string, tx?: Db): Promise<OperationRow | undefined> {
    return t.rowOf(this.#read(tx), id);
  }

  async findAnyByMop(mop: string, limit: number): Promise<OperationRow[]> {
    return [...this.#state.rows.values()]
      .filter((r) => r.merchant_operation_id === mop)
      .sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || (a.id < b.id ? 1 : -1))
      .slice(0, limit)
      .map(copyRow);
  }

  async manualChecks(limit: number, shopId?: string): Promise<OperationRow[]> {
    return [...this.#state.rows.values()]
      .filter((r) => r.status === "manual_check" && (!shopId || r.shop_id === shopId))
      .sort((a, b) => a.updated_at.getTime() - b.updated_at.getTime() || (a.id < b.id ? -1 : 1))
      .slice(0, limit)
      .map(copyRow);
  }

  async lock(id: string, tx: Tx): Promise<OperationRow | undefined> {
    return t.rowOf(this.#in(tx), id);
  }

  async legs(operationId: string, tx?: Db): Promise<LegRow[]> {
    return t.legRows(this.#read(tx), operationId);
  }

  async providerLegs(operationId: string): Promise<ProviderLeg[]> {
    return (this.#state.legs.get(operationId) ?? []).map(({ operation_id: _, ...leg }) => ({ ...leg }));
  }

  async listProviders(): Promise<ProviderSummary[]> {
    return [...this.#state.providers.values()]
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .map((p) => ({
        name: p.name,
        kind: p.kind,
        base_url: p.baseUrl,
        methods: [...p.methods],
        updated_at: p.updatedAt.toISOString(),
      }));
  }

  async listRoutes(shopId: string): Promise<RouteSummary[]> {
    return [...this.#state.routes.entries()]
      .filter(([key]) => key.startsWith(`${shopId}\u0000`))
      .map(([key, r]) => ({
        method: key.slice(shopId.length + 1),
        payin: [...r.payin],
        payout: [...r.payout],
        settlement_currency: r.settlementCurrency,
        updated_at: r.updatedAt.toISOString(),
      }))
      .sort((a, b) => (a.method < b.method ? -1 : 1));
  }

  async routeWithProviders(
    shopId: string,
    method: string,
    direction: "payin" | "payout",
  ): Promise<RouteWithProviders | undefined> {
    return t.routeIn(this.#state, shopId, method, direction);
  }

  async provider(name: string): Promise<ProviderConfig | undefined> {
    const builtIn = builtInProvider(name);
    if (builtIn) return builtIn;
    const p = this.#state.providers.get(name);
    if (!p) return undefined;
    const { updatedAt: _, ...config } = p;
    return config;
  }

  putProvider(p: ProviderConfig): Promise<void> {
    return this.#write(undefined, (s) => {
      s.providers.set(p.name, { ...p, methods: [...p.methods], updatedAt: this.#clock() });
      s.configVersion = (s.configVersion ?? 0n) + 1n;
    });
  }

  putRoute(shopId: string, method: string, route: Route): Promise<void> {
    return this.#write(undefined, (s) => {
      const { payin, payout, settlementCurrency } = route;
      s.routes.set(routeKey(shopId, method), {
        payin: [...payin],
        payout: [...payout],
        settlementCurrency,
        updatedAt: this.#clock(),
      });
      s.configVersion = (s.configVersion ?? 0n) + 1n;
    });
  }

  async flexibleLinkOf(operationId: string): Promise<{ k_hash: string; status: string } | undefined> {
    const link = this.#state.links.get(operationId);
    return link && { k_hash: link.kHash, status: link.status };
  }

  async isFlexiblePayment(id: string): Promise<boolean> {
    return this.#state.links.has(id);
  }

  markHostedPage(operationId: string): Promise<void> {
    return this.#write(undefined, (s) => {
      const row = s.rows.get(operationId);
      if (row && !row.hosted_page) s.rows.set(row.id, { ...row, hosted_page: true });
    });
  }

  async createContext(
    shopId: string,
    mop: string,
    method: string,
    direction: "payin" | "payout",
    budgetMs: number,
  ): Promise<CreateContext> {
    const s = this.#state;
    const id = s.keys.get(keyOf(shopId, mop));
    return {
      existing: id === undefined ? undefined : t.rowOf(s, id),
      routing: t.routeIn(s, shopId, method, direction),
      deadline: at(this.#clock(), budgetMs),
      linkHoldsKey: t.linkHolds(s, shopId, mop),
    };
  }

  insert(row: InsertRow): Promise<OperationRow | undefined> {
    return this.#write(undefined, (s) => t.insertIn(s, newRow(row, this.#clock())));
  }

  claim(
    row: ClaimRow,
    options: { budgetMs: number; forLink: boolean; configVersion: string | null },
  ): Promise<ClaimOutcome> {
    return this.#write(undefined, (s) => t.claimIn(s, this.#clock(), row, options));
  }

  /** The version-checked write under `applyFact`, as `PgOperationStore`'s. */
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: tests reach it through `forceTransition`
  private transition(
    before: OperationRow,
    patch: OperationPatch,
    options: { emit: boolean; statements?: EventStatements; tx?: Db },
  ): Promise<OperationRow | undefined> {
    return this.#write(options.tx as Tx | undefined, (s) =>
      transitionIn(this.#scope(s), before, patch, options),
    );
  }

  applyFact(
    before: OperationRow,
    fact: Fact,
    options: ApplyOptions = {},
  ): Promise<{ row: OperationRow | undefined; applied: Applied }> {
    return this.#write(options.tx, (s) => applyFactIn(this.#scope(s), before, fact, options));
  }

  async insertLeg(tx: Tx, leg: NewLeg): Promise<void> {
    t.addLeg(this.#in(tx), {
      id: leg.id,
      operation_id: leg.operationId,
      provider: leg.provider,
      provider_leg_id: leg.providerLegId,
      amount: leg.amount,
      completed_at: new Date(leg.completedAt),
      receipt_id: leg.receiptId ?? null,
    });
  }

  async deadlineIn(ms: number): Promise<Date> {
    return at(this.#clock(), ms);
  }

  takeOverRouting(
    before: OperationRow,
    budgetMs: number,
    graceMs: number,
  ): Promise<OperationRow | undefined> {
    return this.#write(undefined, (s) => t.takeOverIn(s, this.#clock(), before, budgetMs, graceMs));
  }

  reopen(before: OperationRow, data: DataPatch): Promise<OperationRow | undefined> {
    return this.#write(undefined, (s) => t.reopenIn(s, this.#clock(), before, data));
  }

  claimDue(options: {
    afterMs: number;
    routingGraceMs: number;
    leaseMs: number;
    limit: number;
  }): Promise<ReconcileRow[]> {
    return this.#write(undefined, (s) => t.claimDueIn(s, this.#clock(), options));
  }

  scheduleCheck(id: string, delayMs: number | null, counted: boolean): Promise<void> {
    return this.#write(undefined, (s) => t.scheduleIn(s, this.#clock(), id, delayMs, counted));
  }

  markStuck(afterMs: number, limit: number): Promise<ReconcileRow[]> {
    return this.#write(undefined, (s) => t.markStuckIn(s, this.#clock(), afterMs, limit));
  }

  async countStuck(afterMs: number): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const r of t.stuckIn(this.#state, this.#clock(), afterMs))
      counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
    return counts;
  }

  #scope(s: State): Scope {
    return { s, prefix: this.prefix, clock: this.#clock };
  }

  /** The state a `tx` works on: an open transaction's own. */
  #in(tx: Db): State {
    const s = this.#open.get(tx as object);
    if (!s) throw new Error("MemoryOperationStore: not an open transaction of this store");
    return s;
  }

  /** What a read sees: its transaction's state, or the committed one. */
  #read(tx: Db | undefined): State {
    return tx === undefined ? this.#state : this.#in(tx);
  }

  /** Runs `fn` in `tx`, or in a transaction of its own. */
  async #write<T>(tx: Tx | undefined, fn: (s: State) => T): Promise<T> {
    if (tx !== undefined) return fn(this.#in(tx));
    this.#refuseInside("a write without its tx");
    return this.transaction(async (own) => fn(this.#in(own)));
  }

  #refuseInside(what: string): void {
    const open = this.#inside.getStore();
    if (open && this.#open.has(open))
      throw new Error(`MemoryOperationStore: ${what} inside an open transaction would wait for it forever`);
  }
}
