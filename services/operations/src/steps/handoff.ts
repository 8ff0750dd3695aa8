import type { Logger } from "@gw/log";
import type { Connector } from "../connectors/connector.ts";
import { isTerminal, type OperationRow } from "../domain/model.ts";
import type { Tx } from "../repository/db.ts";
import { HANDOFF_CHANNEL, type HandOffRow } from "../repository/handoffs.ts";
import type { OperationStore } from "../repository/operations.ts";
import { NotifiedLoop } from "./notified-loop.ts";

/**
 * The hand-off of a pool payout's remainder, driven outside any transaction. See
 * docs/architecture.md, "Self-matching pool".
 *
 * `pool_payout.handed_off` only records the decision (`operations.pool_handoffs`: the
 * remainder and the providers after `self_matching` in the payout route, in order), in
 * the consumer's transaction with its inbox row. `HandOffDriver` then asks the provider
 * at `position`, with no transaction open during the call, and records its answer with
 * a statement conditional on the state it read (still `asking`, same `position`), so a
 * driver that crashed, or lost its lease, never applies an answer twice:
 * - accepted: the payout moves to that provider (`pending` under it, as before);
 * - declined (or not configured any more): the next candidate is asked;
 * - no answer (unknown): the provider is asked its status. Rejected or withdrawn passes
 *   it over like a decline; pending (or completed) there means it took the remainder.
 *   `not_found` is no answer (a slow provider may still record the create it got): its
 *   withdrawal by key is asked, and only a confirmed withdrawal (the key tombstoned there)
 *   passes it over. Still no definite answer: asked again after a backoff (`backoffMs`,
 *   doubling, at most `backoffMaxMs`), for as long as it takes (from `attempts` unanswered
 *   asks on, each is logged as an error for an operator). No other candidate is asked
 *   meanwhile: a provider that answers late is asked the same question again (providers
 *   are idempotent on our operation id), never a second provider.
 * - no candidate left: nobody took it (a payout with contributions completes as a
 *   self-matching partial; one without is rejected), as when the route has no provider
 *   after the pool.
 */

export interface HandOffOptions {
  /** Unanswered asks of one provider after which each further one is logged as an error. */
  attempts: number;
  backoffMs: number;
  backoffMaxMs: number;
  /** How often due hand-offs are looked for besides the NOTIFY of a new one. */
  intervalMs: number;
  /** Hand-offs leased by one pass at most. */
  batchSize: number;
}

/** How `handOff` ends a payout nobody took: a partial of what the pool paid, or rejected. */
export type NobodyTookIt = (tx: Tx, row: OperationRow) => Promise<void>;

const eligible = (row: OperationRow | undefined, selfMatching: string): row is OperationRow =>
  row?.type === "payout" && !isTerminal(row.status) && row.provider === selfMatching;

/** What the driver needs of the pool's dependencies (declared here: pool-payouts.ts imports this module). */
export interface HandOffDeps {
  store: OperationStore;
  connectorFor: (kind: string) => Connector | undefined;
  callbackBaseUrl: string;
  attemptTimeoutMs: number;
  logger: Logger;
}

export class HandOffDriver {
  readonly #pool: HandOffDeps;
  readonly #o: HandOffOptions;
  readonly #selfMatching: string;
  readonly #nobodyTookIt: NobodyTookIt;
  readonly #loop: NotifiedLoop;

  constructor(pool: HandOffDeps, options: HandOffOptions, selfMatching: string, nobodyTookIt: NobodyTookIt) {
    this.#pool = pool;
    this.#o = options;
    this.#selfMatching = selfMatching;
    this.#nobodyTookIt = nobodyTookIt;
    this.#loop = new NotifiedLoop({
      store: pool.store,
      channel: HANDOFF_CHANNEL,
      intervalMs: options.intervalMs,
      batchSize: options.batchSize,
      pass: () => this.runOnce(),
      onError: (err) => pool.logger.error({ err: String(err) }, "pool: hand-off pass failed"),
    });
  }

  start(): Promise<void> {
    return this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** One pass: leases the due hand-offs and asks each its provider once. Returns how many. */
  async runOnce(): Promise<number> {
    // Held long enough for one ask (the create, the status question, the withdrawal) and
    // its recording; a crash delays the row by this much.
    const leaseMs = 3 * this.#pool.attemptTimeoutMs + 30_000;
    const due = await this.#pool.store.handoffs.lease(leaseMs, this.#o.batchSize);
    await Promise.all(
      due.map((h) =>
        this.#drive(h).catch((err: unknown) =>
          this.#pool.logger.warn(
            { operationId: h.operation_id, err: String(err) },
            "pool: hand-off step failed; will retry",
          ),
        ),
      ),
    );
    return due.length;
  }

  /** Asks the candidate at the hand-off's position, outside any transaction, and records the answer. */
  async #drive(h: HandOffRow): Promise<void> {
    const { store, logger } = this.#pool;
    const row = await store.findAnyById(h.operation_id);
    if (!eligible(row, this.#selfMatching)) {
      // Settled meanwhile by another path: nothing to hand off any more.
      await store.handoffs.supersede(h.operation_id);
      return;
    }
    const name = h.candidates[h.position] ?? "";
    const provider = await store.provider(name);
    const connector = provider && this.#pool.connectorFor(provider.kind);
    if (!provider || !connector || !provider.methods.includes(row.method ?? "")) {
      logger.warn(
        { operationId: row.id, provider: name },
        "pool: hand-off provider not available; passed over",
      );
      return this.#passOver(h);
    }
    let accepted: boolean;
    try {
      const answer = await connector.create(
        provider,
        {
          operationId: row.id,
          shopId: row.shop_id,
          direction: "payout",
          method: row.method ?? "",
          amount: h.amount,
          currency: row.currency ?? "",
          number: row.number ?? undefined,
          name: row.name ?? undefined,
          bankname: row.bankname ?? undefined,
          callbackUrl: `${this.#pool.callbackBaseUrl}/callbacks/providers/${encodeURIComponent(provider.name)}`,
        },
        AbortSignal.any([this.#loop.signal, AbortSignal.timeout(this.#pool.attemptTimeoutMs)]),
      );
      if (answer.outcome === "unknown") {
        // The provider may have taken the remainder: only its status, or a confirmed
        // withdrawal of a key it has no record of, decides (no row lock is held meanwhile).
        const attempt = () =>
          AbortSignal.any([this.#loop.signal, AbortSignal.timeout(this.#pool.attemptTimeoutMs)]);
        const status = await connector.status(provider, row.id, attempt());
        if (status.status === "not_found") {
          // Given one round of the backoff to record the create (a queue a little behind),
          // then its withdrawal by key is asked.
          if (h.attempts === 0) throw new Error(`${answer.reason}; not found there yet`);
          const withdrawal = await connector.cancel(provider, row.id, attempt(), "payout");
          if (withdrawal.outcome !== "withdrawn")
            throw new Error(`${answer.reason}; not found there, withdrawal: ${withdrawal.outcome}`);
        }
        if (status.status === "not_found" || status.status === "rejected" || status.status === "withdrawn") {
          logger.info(
            { operationId: row.id, provider: name, status: status.status },
            "pool: hand-off provider did not answer and does not hold it; passed over",
          );
          return this.#passOver(h);
        }
        if (status.status === "unknown") throw new Error(`${answer.reason}; status: ${status.reason}`);
        // Pending or already completed there: the provider holds it (a completion comes
        // by its callback or the reconciler's status question).
      }
      accepted = answer.outcome !== "declined";
    } catch (err) {
      // Stopping: not an answer, and not counted; the lease runs out and the ask is repeated.
      if (this.#loop.signal.aborted) return;
      // No definite answer: asked again after a backoff, for as long as it takes. Passing
      // it over could hand the remainder to a second provider while the first pays it.
      const attempts = h.attempts + 1;
      const delayMs = Math.min(this.#o.backoffMaxMs, this.#o.backoffMs * 2 ** Math.min(attempts - 1, 30));
      logger[attempts < this.#o.attempts ? "warn" : "error"](
        { operationId: row.id, provider: name, attempts, delayMs, err: String(err) },
        "pool: hand-off provider did not answer; asking again later",
      );
      await store.handoffs.retryLater(h, attempts, delayMs);
      return;
    }
    if (!accepted) {
      logger.info({ operationId: row.id, provider: name }, "pool: hand-off declined");
      return this.#passOver(h);
    }
    await store.transaction(async (tx) => {
      if (!(await store.handoffs.accept(tx, h, name))) return; // recorded by another driver already
      const locked = await store.lock(h.operation_id, tx);
      if (!eligible(locked, this.#selfMatching)) {
        logger.error(
          { operationId: h.operation_id, provider: name },
          "pool: a provider took a hand-off of a payout settled meanwhile; needs an operator",
        );
        return;
      }
      const { row: next } = await store.applyFact(
        locked,
        { kind: "handed_off", provider: name, from: this.#selfMatching },
        { tx },
      );
      if (!next) throw new Error("payout changed concurrently; retry");
      logger.info(
        { operationId: h.operation_id, provider: name, amount: h.amount },
        "pool: remainder handed off",
      );
    });
  }

  /** The candidate at `position` will not take it: the next one is asked, or nobody took it. */
  async #passOver(h: HandOffRow): Promise<void> {
    if (h.position + 1 < h.candidates.length) {
      await this.#pool.store.handoffs.advance(h);
      this.#loop.wake();
      return;
    }
    await this.#pool.store.transaction(async (tx) => {
      if (!(await this.#pool.store.handoffs.exhaust(tx, h))) return;
      const locked = await this.#pool.store.lock(h.operation_id, tx);
      if (!eligible(locked, this.#selfMatching)) return;
      this.#pool.logger.info({ operationId: h.operation_id }, "pool: no provider took the remainder");
      await this.#nobodyTookIt(tx, locked);
    });
  }
}
