import type { Sql } from "@gw/db";
import type { EventStatements } from "../domain/events.ts";
import type { Applied, Fact } from "../domain/lifecycle/apply.ts";
import type { LegRow, OperationRow, ReconcileRow } from "../domain/model.ts";
import type { ProviderConfig } from "../domain/providers.ts";
import { AuditRepository } from "./audit.ts";
import * as claims from "./claims.ts";
import type { Db, Tx } from "./db.ts";
import { type BatchOptions, GroupCommit } from "./group-commit.ts";
import { HandOffRepository } from "./handoffs.ts";
import * as writes from "./lifecycle-writes.ts";
import { LinkRepository } from "./links.ts";
import { OperatorQueueRepository } from "./operator-queue.ts";
import { enqueueEvent } from "./outbox.ts";
import { ProviderFactRepository } from "./provider-facts.ts";
import * as queue from "./reconcile-queue.ts";
import * as routes from "./routes.ts";
import * as rows from "./rows.ts";
import { ShopPageRepository } from "./shop-pages.ts";
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
} from "./store.ts";
import { WithdrawalRepository } from "./withdrawals.ts";

export type { CreateStore, OperationStoreCore } from "./store.ts";
export { NON_TERMINAL, UNSETTLED } from "./store.ts";
export type {
  ClaimRow,
  DataPatch,
  LegRow,
  OperationPatch,
  OperationStore,
  ReconcileRow,
  Route,
  RouteWithProviders,
};

/**
 * The operations store on Postgres: each method one module function of this folder
 * (rows.ts, claims.ts, routes.ts, lifecycle-writes.ts, reconcile-queue.ts), the side
 * tables' repositories beside it. State changes go through `applyFact`, whose write is
 * version-checked and queues its event in the same statement (lifecycle-writes.ts).
 */
export class PgOperationStore implements OperationStore {
  readonly #sql: Sql;
  readonly #writer: writes.Writer;
  readonly withdrawals: WithdrawalRepository;
  readonly handoffs: HandOffRepository;
  readonly links: LinkRepository;
  readonly facts: ProviderFactRepository;
  readonly audit: AuditRepository;
  readonly operatorQueue: OperatorQueueRepository;
  readonly shopPages: ShopPageRepository;

  readonly #claims: GroupCommit<claims.ClaimItem, ClaimOutcome>;

  /** `batches`: how the claims and the autocommit row writes are batched (`GroupCommit`). */
  constructor(sql: Sql, prefix: string, batches: BatchOptions = {}) {
    this.#sql = sql;
    this.#writer = writes.writer(sql, prefix, batches);
    this.#claims = new GroupCommit({
      kind: "claim",
      ...batches,
      // By the key itself: two claims of one key never share a statement, whatever their ids.
      key: (c) => `${c.row.shop_id}\n${c.row.merchant_operation_id}`,
      run: (items) => claims.claimAll(sql, items),
    });
    this.withdrawals = new WithdrawalRepository(sql);
    this.handoffs = new HandOffRepository(sql);
    this.links = new LinkRepository(sql);
    this.facts = new ProviderFactRepository(sql);
    this.audit = new AuditRepository(sql);
    this.operatorQueue = new OperatorQueueRepository(sql);
    this.shopPages = new ShopPageRepository(sql);
  }

  enqueue(tx: Tx, event: { id: string; subject: string; payload: Uint8Array }): Promise<void> {
    return enqueueEvent(tx, event.id, event.subject, event.payload);
  }

  get prefix(): string {
    return this.#writer.prefix;
  }

  async listen(channel: string, onNotify: () => void): Promise<() => Promise<void>> {
    const listener = await this.#sql.listen(channel, onNotify);
    return () => listener.unlisten();
  }

  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.#sql.begin(fn) as Promise<T>;
  }

  recordCallback(
    tx: Tx,
    callback: { provider: string; callbackId: string; operationId: string },
  ): Promise<boolean> {
    return rows.recordCallback(tx, callback);
  }

  findByMop(shopId: string, mop: string, tx: Db = this.#sql): Promise<OperationRow | undefined> {
    return rows.findByMop(tx, shopId, mop);
  }

  findById(shopId: string, id: string, tx: Db = this.#sql): Promise<OperationRow | undefined> {
    return rows.findById(tx, shopId, id);
  }

  findAnyById(id: string, tx: Db = this.#sql): Promise<OperationRow | undefined> {
    return rows.findAnyById(tx, id);
  }

  findAnyByMop(mop: string, limit: number): Promise<OperationRow[]> {
    return rows.findAnyByMop(this.#sql, mop, limit);
  }

  manualChecks(limit: number, shopId?: string): Promise<OperationRow[]> {
    return rows.manualChecks(this.#sql, limit, shopId);
  }

  lock(id: string, tx: Tx): Promise<OperationRow | undefined> {
    return rows.lock(tx, id);
  }

  legs(operationId: string, tx: Db = this.#sql): Promise<LegRow[]> {
    return rows.legs(tx, operationId);
  }

  providerLegs(operationId: string): Promise<ProviderLeg[]> {
    return rows.providerLegs(this.#sql, operationId);
  }

  async listProviders(): Promise<ProviderSummary[]> {
    return routes.listProviders(this.#sql);
  }

  async listRoutes(shopId: string): Promise<RouteSummary[]> {
    return routes.listRoutes(this.#sql, shopId);
  }

  routeWithProviders(
    shopId: string,
    method: string,
    direction: "payin" | "payout",
  ): Promise<RouteWithProviders | undefined> {
    return routes.routeWithProviders(this.#sql, shopId, method, direction);
  }

  provider(name: string): Promise<ProviderConfig | undefined> {
    return routes.provider(this.#sql, name);
  }

  putProvider(p: ProviderConfig): Promise<void> {
    return routes.putProvider(this.#sql, p);
  }

  putRoute(shopId: string, method: string, route: Route): Promise<void> {
    return routes.putRoute(this.#sql, shopId, method, route);
  }

  flexibleLinkOf(operationId: string): Promise<{ k_hash: string; status: string } | undefined> {
    return rows.flexibleLinkOf(this.#sql, operationId);
  }

  isFlexiblePayment(id: string): Promise<boolean> {
    return rows.isFlexiblePayment(this.#sql, id);
  }

  markHostedPage(operationId: string): Promise<void> {
    return rows.markHostedPage(this.#sql, operationId);
  }

  createContext(
    shopId: string,
    mop: string,
    method: string,
    direction: "payin" | "payout",
    budgetMs: number,
  ): Promise<CreateContext> {
    return claims.createContext(this.#sql, shopId, mop, method, direction, budgetMs);
  }

  insert(row: InsertRow): Promise<OperationRow | undefined> {
    return rows.insert(this.#sql, row);
  }

  claim(
    row: ClaimRow,
    options: { budgetMs: number; forLink: boolean; configVersion: string | null },
  ): Promise<ClaimOutcome> {
    return this.#claims.submit({ row, options });
  }

  /**
   * The version-checked write under `applyFact` (lifecycle-writes.ts). Private: only
   * `applyFact` writes a change; tests reach it to check the guard (`forceTransition`).
   */
  private transition(
    before: OperationRow,
    patch: OperationPatch,
    options: { emit: boolean; statements?: EventStatements; tx?: Db },
  ): Promise<OperationRow | undefined> {
    return writes.transition(this.#writer, before, patch, options);
  }

  applyFact(
    before: OperationRow,
    fact: Fact,
    options: ApplyOptions = {},
  ): Promise<{ row: OperationRow | undefined; applied: Applied }> {
    return writes.applyFact(this.#writer, before, fact, options);
  }

  insertLeg(tx: Tx, leg: NewLeg): Promise<void> {
    return rows.insertLeg(tx, leg);
  }

  deadlineIn(ms: number): Promise<Date> {
    return claims.deadlineIn(this.#sql, ms);
  }

  takeOverRouting(
    before: OperationRow,
    budgetMs: number,
    graceMs: number,
  ): Promise<OperationRow | undefined> {
    return claims.takeOverRouting(this.#sql, before, budgetMs, graceMs);
  }

  reopen(before: OperationRow, data: DataPatch): Promise<OperationRow | undefined> {
    return claims.reopen(this.#sql, before, data);
  }

  claimDue(options: {
    afterMs: number;
    routingGraceMs: number;
    leaseMs: number;
    limit: number;
  }): Promise<ReconcileRow[]> {
    return queue.claimDue(this.#sql, options);
  }

  scheduleCheck(id: string, delayMs: number | null, counted: boolean): Promise<void> {
    return queue.scheduleCheck(this.#sql, id, delayMs, counted);
  }

  markStuck(afterMs: number, limit: number): Promise<ReconcileRow[]> {
    return queue.markStuck(this.#sql, afterMs, limit);
  }

  countStuck(afterMs: number): Promise<Map<string, number>> {
    return queue.countStuck(this.#sql, afterMs);
  }
}
