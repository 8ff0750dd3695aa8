import { fromBinary } from "@bufbuild/protobuf";
import type { Sql } from "@gw/db";
import {
  CONSUMER_SUBJECTS,
  type EventApplier,
  type Nats,
  type RetryPolicy,
  type RunningConsumer,
  runConsumer,
} from "@gw/events";
import type { Logger } from "@gw/log";
import { type OperationEvent, OperationEventSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import type { Connector } from "../connectors/connector.ts";
import { StillRoutingError } from "../domain/lifecycle/errors.ts";
import type { Tx } from "../repository/db.ts";
import type { OperationStore } from "../repository/operations.ts";
import {
  insertWithdrawal,
  providerOfOperation,
  WITHDRAWALS_CHANNEL,
  type WithdrawalRow,
  type Withdrawals,
} from "../repository/withdrawals.ts";
import { NotifiedLoop } from "./notified-loop.ts";
import { applyProviderResult } from "./provider-results.ts";

/**
 * Withdrawals at a provider, one row per operation and provider in `operations.withdrawals`:
 * - a cancel reaches the provider (docs/architecture.md, "Cancel and the race against
 *   create"). The cancel commits `cancelled` with its `payment.cancelled` event; the
 *   durable consumer `operations-withdrawals` turns that committed event into a row (in
 *   the transaction that records the event in the inbox), so a process that dies right
 *   after the cancel still withdraws;
 * - a payin the create cascade passed over because its provider's answer was unknown
 *   (`passed_over`): the create writes the row in the transaction that passes the
 *   provider over (`recordPassedOver`), leased to itself for its first ask (`askNow`),
 *   so a process that dies right after the pass-over still withdraws: the driver asks
 *   once the lease has run out. Should that provider hold the operation by the time it
 *   is asked (a retried create it accepted), it is left there (`held`).
 *
 * `WithdrawalDriver` asks the provider to withdraw (`Connector.cancel`) with no
 * transaction open during the call, and records the answer:
 * - `withdrawn`, `not_found`: done, no money will move;
 * - `final`: the provider completed (or rejected) first; the result is applied like its
 *   callback, which records a completion as a provider fact (the payment stays cancelled,
 *   or, passed over, another provider's); a payin still being routed is asked again;
 * - `not_supported`: done; a later completion arrives as a callback and follows the same rule;
 * - `unknown`, or a final result that could not be recorded (its transaction failed):
 *   asked again with backoff, at most `attempts` times, then given up (logged as an error,
 *   `gave_up` with the last error; the operation stays cancelled and a later completion
 *   is again a provider fact).
 */

export interface WithdrawalOptions {
  /** Unanswered asks before the withdrawal is given up. */
  attempts: number;
  backoffMs: number;
  backoffMaxMs: number;
  /** How often due withdrawals are looked for besides the NOTIFY of a new one. */
  intervalMs: number;
  /** Withdrawals leased by one pass at most. */
  batchSize: number;
  /** The longest one ask may take. */
  attemptTimeoutMs: number;
}

export interface WithdrawalDeps {
  store: OperationStore;
  connectorFor: (kind: string) => Connector | undefined;
  logger: Logger;
}

/** Records the withdrawal of a cancelled payment, in the consumer's transaction. */
async function onCancelled(tx: Tx, event: OperationEvent): Promise<void> {
  if (event.type !== "payment.cancelled" || !event.operation) return;
  const provider = await providerOfOperation(tx, event.operation.operationId);
  // A pool payin's slot is withdrawn like any provider's requisites (`PoolConnector.cancel`).
  if (!provider) return;
  await insertWithdrawal(tx, event.operation.operationId, provider);
}

/** How long one ask holds its withdrawal; a crash delays the row by this much. */
export const withdrawalLeaseMs = (attemptTimeoutMs: number) => attemptTimeoutMs + 5_000;

/**
 * Records, in the create's transaction `tx` that passes `provider` over, the withdrawal of
 * a payin whose create answer was unknown there. Leased to the caller for `leaseMs`, who
 * asks it at once (`WithdrawalDriver.askNow`); should the caller die first, the driver
 * asks once the lease has run out. A row of an earlier pass-over is asked again.
 */
export function recordPassedOver(
  store: { readonly withdrawals: Pick<Withdrawals, "passedOver"> },
  tx: Tx,
  operationId: string,
  provider: string,
  leaseMs: number,
): Promise<void> {
  return store.withdrawals.passedOver(tx, operationId, provider, leaseMs);
}

/** Starts the consumer that turns committed cancels into withdrawals. */
/** The withdrawal consumer's decode and handle, shared by the runner and an operator's retry of a dead letter. */
export const withdrawalApplier: EventApplier<OperationEvent> = {
  durable: "operations-withdrawals",
  decode: (data) => fromBinary(OperationEventSchema, data),
  handle: (tx, event) => onCancelled(tx, event),
};

export function startWithdrawalConsumer(options: {
  nats: Nats;
  prefix: string;
  sql: Sql;
  logger: Logger;
  retry?: RetryPolicy | undefined;
}): Promise<RunningConsumer> {
  return runConsumer<OperationEvent>({
    ...withdrawalApplier,
    nats: options.nats,
    prefix: options.prefix,
    subjects: [...CONSUMER_SUBJECTS["operations-withdrawals"]],
    sql: options.sql,
    schema: "operations",
    logger: options.logger,
    ...(options.retry ? { retry: options.retry } : {}),
    // Handling is one read and one insert: a cancel taken by a process that died is
    // redelivered after 10 s rather than JetStream's default 30 s.
    ackWaitMs: 10_000,
  });
}

/** Drives due withdrawals: one provider call each, outside any transaction. */
export class WithdrawalDriver {
  readonly #d: WithdrawalDeps;
  readonly #o: WithdrawalOptions;
  readonly #loop: NotifiedLoop;

  constructor(deps: WithdrawalDeps, options: WithdrawalOptions) {
    this.#d = deps;
    this.#o = options;
    this.#loop = new NotifiedLoop({
      store: deps.store,
      channel: WITHDRAWALS_CHANNEL,
      intervalMs: options.intervalMs,
      batchSize: options.batchSize,
      pass: () => this.runOnce(),
      onError: (err) => deps.logger.error({ err: String(err) }, "withdrawal pass failed"),
    });
  }

  start(): Promise<void> {
    return this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** One pass: leases due withdrawals (pushing them past one ask) and asks each once. */
  async runOnce(): Promise<number> {
    // Held for one ask and its recording; a crash delays the row by this much. A lease
    // that ran out under a slow holder only asks again: a withdrawal is idempotent at the
    // provider, and a final result applies once under the row lock.
    const leaseMs = withdrawalLeaseMs(this.#o.attemptTimeoutMs);
    const due = await this.#d.store.withdrawals.lease(leaseMs, this.#o.batchSize);
    await Promise.all(
      due.map((w) =>
        this.#withdraw(w).catch((err: unknown) =>
          this.#d.logger.warn(
            { operationId: w.operation_id, err: String(err) },
            "withdrawal failed; will retry",
          ),
        ),
      ),
    );
    return due.length;
  }

  /**
   * Asks the withdrawal of a payin the caller has just passed over (`recordPassedOver`,
   * whose lease it holds) once, now; an ask without a definite answer is asked again by
   * the driver after the backoff. Never rejects.
   */
  async askNow(operationId: string, provider: string): Promise<void> {
    try {
      const w = await this.#d.store.withdrawals.asking(operationId, provider);
      if (w) await this.#withdraw(w);
    } catch (err) {
      this.#d.logger.warn({ operationId, provider, err: String(err) }, "withdrawal failed; will retry");
    }
  }

  async #withdraw(w: WithdrawalRow): Promise<void> {
    const { store, logger } = this.#d;
    if (w.passed_over) {
      const op = await store.findAnyById(w.operation_id);
      if (op?.provider === w.provider) {
        logger.warn(
          { operationId: w.operation_id, provider: w.provider },
          "withdrawal of a passed-over payin: that provider holds the operation now; left there",
        );
        return this.#record(w, "held", null);
      }
    }
    const provider = await store.provider(w.provider);
    const connector = provider && this.#d.connectorFor(provider.kind);
    if (!provider || !connector) {
      logger.error(
        { operationId: w.operation_id, provider: w.provider },
        "withdrawal: provider not configured",
      );
      return this.#record(w, "gave_up", "provider not configured");
    }
    const answer = await connector.cancel(
      provider,
      w.operation_id,
      AbortSignal.any([this.#loop.signal, AbortSignal.timeout(this.#o.attemptTimeoutMs)]),
    );
    switch (answer.outcome) {
      case "withdrawn":
      case "not_found":
      case "not_supported":
        logger.info(
          { operationId: w.operation_id, provider: w.provider, answer: answer.outcome },
          "withdrawal ended",
        );
        return this.#record(w, answer.outcome, null);
      case "final":
        try {
          await store.transaction(async (tx) => {
            // A result for a payin still being routed has no place yet (the create may
            // record another provider, or none): asked again after the backoff.
            if ((await store.lock(w.operation_id, tx))?.status === "routing") throw new StillRoutingError();
            await applyProviderResult(
              this.#d,
              tx,
              provider.name,
              { ...answer.result, operationId: w.operation_id },
              "reconciler",
            );
            await this.#record(w, "final", null, tx);
          });
        } catch (err) {
          // Rolled back, attempt count included: counted here, so a result that can never
          // be recorded is given up after `attempts` tries instead of asked for ever.
          return this.#failed(w, `final result not recorded: ${String(err)}`, answer.result.status);
        }
        return;
      case "unknown":
        return this.#failed(w, answer.reason);
    }
  }

  /**
   * Counts an ask that ended without a recorded answer: asked again after a backoff, or
   * given up (logged as an error, `gave_up` with the reason) once `attempts` are spent.
   */
  async #failed(w: WithdrawalRow, reason: string, result?: string): Promise<void> {
    const attempts = w.attempts + 1;
    const context = { operationId: w.operation_id, provider: w.provider, attempts, reason, result };
    if (attempts >= this.#o.attempts) {
      this.#d.logger.error(
        context,
        "withdrawal given up: no answer could be recorded; a later completion is recorded as a provider fact",
      );
      return this.#record(w, "gave_up", reason);
    }
    this.#d.logger.warn(context, "withdrawal not answered; asking again later");
    const delayMs = Math.min(this.#o.backoffMaxMs, this.#o.backoffMs * 2 ** Math.min(w.attempts, 30));
    await this.#d.store.withdrawals.retryLater(w, attempts, reason, delayMs);
  }

  async #record(w: WithdrawalRow, status: string, error: string | null, tx?: Tx) {
    await this.#d.store.withdrawals.end(w, status, error, tx);
  }
}
