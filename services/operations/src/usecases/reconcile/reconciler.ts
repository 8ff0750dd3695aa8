import { setTimeout as sleep } from "node:timers/promises";
import type { ProviderResult } from "../../connectors/connector.ts";
import {
  ConcurrentChangeError,
  DependencyUnavailableError,
  NoProviderAcceptedError,
} from "../../domain/lifecycle/errors.ts";
import { isTerminal } from "../../domain/model.ts";
import { NON_TERMINAL, type ReconcileRow } from "../../repository/operations.ts";
import { reconcilePooled, releaseSlot, SELF_MATCHING } from "../../steps/pool.ts";
import type { PoolDeps } from "../../steps/pool-deps.ts";
import { applyProviderResult } from "../../steps/provider-results.ts";
import { ROUTING_GRACE_MS, reroute } from "../../steps/resume.ts";
import { leaseAndHandle, rowLeaseMs } from "./leasing.ts";
import {
  ALERT_BATCH,
  ALERT_EVERY_INTERVALS,
  ALERT_EVERY_MAX_MS,
  type Outcome,
  PARALLEL,
  type PassSummary,
  payoutsAwaitingOperator,
  type ReconcilerDeps,
  type ReconcilerOptions,
  stuckOperations,
} from "./options.ts";
import { resumeReview } from "./under-review.ts";

/**
 * Settles or expires operations that were left without a result, so none stays
 * non-terminal forever without an operator seeing it.
 *
 * Each pass leases up to a batch of due rows, a row at a time per worker and each for one
 * handling (see `OperationStore.claimDue`): several replicas share the work without
 * picking the same row, and every effect goes through
 * the version-checked `transition()` or the row-locked `applyProviderResult`, so even a
 * lease that ran out while its holder was slow cannot apply anything twice.
 *
 * - `pending`/`awaiting_confirmation` past `expires_at` or older than `afterMs`: the
 *   routed provider is asked for the status. Completed or rejected is applied exactly
 *   like its callback. A payment still pending past `expires_at` is withdrawn at its
 *   provider first (`Connector.cancel`) and recorded `rejected` with its event only once
 *   withdrawn or never received; otherwise (no withdrawal offered, no answer) it is asked
 *   again, and a completion that still arrives is applied or, after a terminal status,
 *   recorded as a provider fact. A payout's expiry is the provider's to report: a local
 *   `expires_at` never rejects it nor releases its reserve. Still pending before the
 *   expiry, or no answer at all: asked again after a per-operation backoff (never later
 *   than the expiry). A provider that does not answer never leads to an expiry.
 * - `routing` past its deadline by the database's clock (the create's process died, or it
 *   answered 503 with a provider's answer still unknown): driven like a retried create
 *   drives it (`reroute`), from the stored cascade position: a provider whose answer is
 *   unknown is asked its status first, and nobody after it is asked before it answers
 *   definitely (`not_found` is not definite: only a decline or a confirmed withdrawal
 *   is). Still unknown: asked again after the per-operation backoff, for as long as it
 *   takes; a payout still unknown past `operatorHorizonMs` also goes to the operator queue
 *   (`operator_queued_at`, an error logged once, `operations_payouts_awaiting_operator`),
 *   where a person decides with the provider's evidence: never an automatic cascade. When
 *   nobody accepts, the row becomes `rejected` without an event, like such a create.
 * - Every few passes it also raises a warning, once per operation, for operations
 *   non-terminal for longer than `alertAfterMs`, and sets the `operations_stuck` gauge.
 */
export class Reconciler {
  readonly #deps: ReconcilerDeps;
  readonly #o: ReconcilerOptions;
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;
  #lastAlert = 0;

  constructor(deps: ReconcilerDeps, options: ReconcilerOptions) {
    this.#deps = deps;
    this.#o = options;
  }

  /** Starts the loop in the background; `stop()` ends it. */
  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops after the pass in flight: leased rows not yet handled are released at once. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  /** One pass: leases due operations, handles them, then raises the stuck alerts when their turn has come. */
  async runOnce(): Promise<PassSummary> {
    const { store, logger } = this.#deps;
    const summary: PassSummary = {
      claimed: 0,
      completed: 0,
      rejected: 0,
      expired: 0,
      routed: 0,
      pending: 0,
      unchanged: 0,
      failed: 0,
      alerted: 0,
    };
    summary.claimed = await leaseAndHandle({
      limit: this.#o.batchSize,
      parallel: PARALLEL,
      lease: (limit) =>
        store.claimDue({
          afterMs: this.#o.afterMs,
          routingGraceMs: ROUTING_GRACE_MS,
          leaseMs: this.#leaseMs(),
          limit,
        }),
      handle: async (row) => {
        summary[await this.#handle(row)]++;
      },
      stopped: () => this.#stop.signal.aborted,
      onLeaseError: (err) => logger.warn({ err: String(err) }, "reconcile: leasing the next row failed"),
    });
    if (this.#deps.pool) await this.#releaseLinkSlots(this.#deps.pool);
    const alertEveryMs = Math.min(this.#o.intervalMs * ALERT_EVERY_INTERVALS, ALERT_EVERY_MAX_MS);
    if (Date.now() - this.#lastAlert >= alertEveryMs) {
      this.#lastAlert = Date.now();
      summary.alerted = await this.#alert();
    }
    if (summary.claimed > 0) logger.info({ ...summary }, "reconcile pass");
    return summary;
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      let full = false;
      try {
        full = (await this.runOnce()).claimed >= this.#o.batchSize;
      } catch (err) {
        this.#deps.logger.error({ err: String(err) }, "reconcile pass failed");
      }
      // A full batch means more are due: go on at once; otherwise wait for the next round.
      if (!full) await sleep(this.#o.intervalMs, undefined, { signal }).catch(() => {});
    }
  }

  /** One leased row: reconciled, or released at once when the reconciler is stopping. */
  async #handle(row: ReconcileRow): Promise<Outcome> {
    const { store, logger } = this.#deps;
    if (this.#stop.signal.aborted) {
      // Not handled: due again at once for whoever runs next.
      await store.scheduleCheck(row.id, 0, false);
      return "unchanged";
    }
    try {
      return await this.#reconcile(row);
    } catch (err) {
      logger.warn({ operationId: row.id, err: String(err) }, "reconcile failed; will retry");
      await store.scheduleCheck(row.id, this.#backoff(row), false).catch(() => {});
      return "failed";
    }
  }

  async #reconcile(row: ReconcileRow): Promise<Outcome> {
    if (row.status === "routing") return this.#drive(row);
    return row.review_started_at ? this.#underReview(row) : this.#ask(row);
  }

  /**
   * A payment whose receipt is under review is neither asked about nor expired: its
   * verdict is looked for instead (`resumeReview`). Still running: looked for again after
   * the backoff; over without a verdict: handled as any other row in the next pass.
   */
  async #underReview(row: ReconcileRow): Promise<Outcome> {
    const resumed = await resumeReview(this.#deps, row);
    if (resumed === "waiting" || resumed === "ended") {
      await this.#deps.store.scheduleCheck(row.id, resumed === "ended" ? 0 : this.#backoff(row), false);
      return "pending";
    }
    const { status } = resumed.applied;
    return status === "completed" || status === "rejected" ? status : "pending";
  }

  /** Asks the provider about a pending operation and acts on the answer. */
  async #ask(row: ReconcileRow): Promise<Outcome> {
    const { store, logger } = this.#deps;
    if (row.provider === SELF_MATCHING && this.#deps.pool) return this.#askPool(row, this.#deps.pool);
    const provider = row.provider ? await store.provider(row.provider) : undefined;
    const connector = provider && this.#deps.connectorFor(provider.kind);
    if (!provider || !connector) {
      logger.warn({ operationId: row.id, provider: row.provider }, "reconcile: provider not configured");
      await store.scheduleCheck(row.id, this.#backoff(row), true);
      return "failed";
    }
    const answer = await connector.status(
      provider,
      row.id,
      AbortSignal.any([this.#stop.signal, AbortSignal.timeout(this.#deps.attemptTimeoutMs)]),
    );
    const expired = row.expires_at !== null && row.expires_at.getTime() <= Date.now();
    if (answer.status === "not_found" || answer.status === "withdrawn") {
      // A payin past its expiry that its provider withdrew, or never received, ends here:
      // no money can arrive for it any more.
      if (expired && row.type === "payment") return this.#expire(row, provider.name);
    }
    if (answer.status === "unknown" || answer.status === "not_found" || answer.status === "withdrawn") {
      // Nothing to apply: a pending row's provider that does not know it, or withdrew it,
      // is a question for an operator, asked again later like no answer at all.
      logger.warn(
        { operationId: row.id, provider: provider.name, answer: answer.status },
        "reconcile: provider did not answer the status question",
      );
      await store.scheduleCheck(row.id, this.#backoff(row), true);
      return "failed";
    }
    if (answer.status !== "pending") return this.#apply(row, provider.name, answer);
    if (expired && row.type === "payment") {
      // The payer's window is over: withdraw the requisites first, so that nothing is paid
      // into them after the gateway records the expiry. Only a definite answer ends it.
      const withdrawal = await connector.cancel(
        provider,
        row.id,
        AbortSignal.any([this.#stop.signal, AbortSignal.timeout(this.#deps.attemptTimeoutMs)]),
      );
      if (withdrawal.outcome === "withdrawn" || withdrawal.outcome === "not_found")
        return this.#expire(row, provider.name);
      if (withdrawal.outcome === "final") return this.#apply(row, provider.name, withdrawal.result);
      logger.warn(
        { operationId: row.id, provider: provider.name, answer: withdrawal.outcome },
        "reconcile: expired payment not withdrawn at its provider; asking again",
      );
    }
    // A payout's expiry is the provider's to report (a rejection); a local clock never
    // releases its reserve while the provider may still pay it.
    await store.scheduleCheck(row.id, this.#backoff(row), true);
    return "pending";
  }

  /** Applies a final result the provider reported, exactly as its callback would. */
  async #apply(
    row: ReconcileRow,
    providerName: string,
    result: Omit<ProviderResult, "operationId">,
  ): Promise<Outcome> {
    const { store, logger } = this.#deps;
    const outcome = await store.transaction((tx) =>
      applyProviderResult(this.#deps, tx, providerName, { ...result, operationId: row.id }, "reconciler"),
    );
    if (outcome !== "applied") return "unchanged";
    logger.info({ operationId: row.id, status: result.status }, "reconciled from the provider's status");
    return result.status;
  }

  /** Records a payin expired (`rejected`) once its provider withdrew it or never had it. */
  async #expire(row: ReconcileRow, providerName: string): Promise<Outcome> {
    const { store, logger } = this.#deps;
    const { row: expired } = await store.applyFact(row, { kind: "expired" });
    if (expired) {
      logger.info({ operationId: row.id, provider: providerName }, "expired: withdrawn at the provider");
      return "expired";
    }
    // Changed meanwhile (a callback, a cancel): look again soon unless it is settled.
    const now = await store.findAnyById(row.id);
    if (now && !isTerminal(now.status)) await store.scheduleCheck(row.id, 0, false);
    return "unchanged";
  }

  /**
   * A flexible link's attempt admits a slot before it writes the payment row; when the
   * create fails in between (a quote or ledger 503) and no retry decides the link, nothing
   * else ends that slot (nor one whose payment ended outside the pool, when the attempt's
   * own release failed). Each such undecided link (expired, or `deciding` for `afterMs`)
   * is claimed like an attempt, so no create or confirmation admits or writes its payment
   * meanwhile, and its slot released (`expired`, at the payment's version, or 0 without
   * one: the claim orders it against the link's attempts). A later attempt takes a new
   * claim and is admitted afresh. Failures are retried in the next pass.
   */
  async #releaseLinkSlots(pool: PoolDeps): Promise<void> {
    const { store, logger } = this.#deps;
    try {
      const links = await store.links.undecidedWithoutPayment(this.#o.afterMs, this.#o.batchSize);
      for (const link of links) {
        const held = await store.links.claim(link.operation_id, link.status, this.#leaseMs());
        if (!held?.claim) continue;
        try {
          const op = await store.findAnyById(link.operation_id);
          if (op && (op.provider === SELF_MATCHING || !["rejected", "cancelled"].includes(op.status)))
            continue;
          await releaseSlot(pool, link.operation_id, "expired", op?.version);
          await store.links.slotReleased(link.operation_id, held.claim);
        } finally {
          await store.links.release(link.operation_id, held.claim);
        }
      }
    } catch (err) {
      logger.warn({ err: String(err) }, "flexible link slot release failed; will retry");
    }
  }

  /** An operation in the pool: no provider to ask; expiry and the payout's pool state decide. */
  async #askPool(row: ReconcileRow, pool: PoolDeps): Promise<Outcome> {
    const outcome = await reconcilePooled(pool, row);
    if (outcome === "pending") {
      await this.#deps.store.scheduleCheck(row.id, this.#backoff(row), true);
      return "pending";
    }
    return outcome;
  }

  /** Finishes the routing of a create whose process died. */
  async #drive(row: ReconcileRow): Promise<Outcome> {
    const { store, logger } = this.#deps;
    // Not tied to stop(): a routing interrupted half-way would record a rejection while a
    // provider may have accepted. It is bounded by the create budget instead.
    const deadline = Date.now() + this.#deps.budgetMs;
    try {
      const next = await reroute(this.#deps, row, deadline, AbortSignal.timeout(this.#deps.budgetMs));
      logger.info({ operationId: row.id, status: next.status }, "reconcile: abandoned routing finished");
      await store.scheduleCheck(row.id, null, false);
      return next.status === "rejected" ? "rejected" : "routed";
    } catch (err) {
      if (err instanceof NoProviderAcceptedError) {
        logger.info({ operationId: row.id }, "reconcile: abandoned routing found no provider; rejected");
        return "rejected";
      }
      if (err instanceof DependencyUnavailableError || err instanceof ConcurrentChangeError) {
        // A provider's answer is still unknown (or another driver holds the row): the row
        // stays `routing` and is asked about again after the backoff.
        logger.warn({ operationId: row.id }, "reconcile: routing still unresolved; will ask again");
        await store.scheduleCheck(row.id, this.#backoff(row), true);
        if (row.type === "payout") await this.#toOperator(row);
        return "pending";
      }
      throw err;
    }
  }

  /**
   * A payout still unresolved past the horizon goes to the operator queue, once: its
   * provider may hold it, and only that provider's own evidence, read by a person, decides
   * between "it paid" and "it never will". The reconciler goes on asking meanwhile.
   */
  async #toOperator(row: ReconcileRow): Promise<void> {
    const queued = await this.#deps.store.operatorQueue.queueUnresolvedPayout(
      row.id,
      this.#o.operatorHorizonMs,
    );
    if (!queued) return;
    this.#deps.logger.error(
      {
        operationId: queued.id,
        shopId: queued.shop_id,
        provider: queued.routing_unresolved,
        createdAt: queued.created_at.toISOString(),
      },
      "payout unresolved past the operator horizon: its provider neither declined it nor confirmed a withdrawal; an operator decides with the provider's evidence",
    );
  }

  /** Logs each newly stuck operation once and refreshes the gauge. */
  async #alert(): Promise<number> {
    const { store, logger } = this.#deps;
    const stuck = await store.markStuck(this.#o.alertAfterMs, ALERT_BATCH);
    for (const row of stuck) {
      logger.warn(
        {
          operationId: row.id,
          shopId: row.shop_id,
          type: row.type,
          status: row.status,
          provider: row.provider,
          createdAt: row.created_at.toISOString(),
          checks: row.reconcile_checks,
        },
        "operation stuck: still not terminal, needs an operator",
      );
    }
    const counts = await store.countStuck(this.#o.alertAfterMs);
    for (const status of NON_TERMINAL) stuckOperations.set({ status }, counts.get(status) ?? 0);
    payoutsAwaitingOperator.set(await store.operatorQueue.countAwaiting());
    return stuck.length;
  }

  /** Wait before the next question about `row`: doubles with each question asked. */
  #backoff(row: ReconcileRow): number {
    const exponent = Math.min(row.reconcile_checks, 30);
    return Math.min(this.#o.backoffMaxMs, this.#o.backoffMs * 2 ** exponent);
  }

  /** A row's lease (`rowLeaseMs`). */
  #leaseMs(): number {
    return rowLeaseMs(this.#deps.budgetMs, this.#deps.attemptTimeoutMs);
  }
}
