import { Code, ConnectError } from "@connectrpc/connect";
import {
  CallbackRejectedError,
  type Connector,
  type ProviderAnswer,
  type ProviderCreateRequest,
  type ProviderStatus,
  type WithdrawAnswer,
} from "../connectors/connector.ts";
import { matchingRefusal } from "../domain/dependency-errors.ts";
import type { OperationRow } from "../domain/model.ts";
import { SELF_MATCHING } from "../domain/providers.ts";
import { addPayout, poolAnswer, releaseSlot } from "./pool.ts";
import type { PoolDeps } from "./pool-deps.ts";

/**
 * The self-matching pool behind the connector port (kind `self_matching`, provider
 * `POOL_PROVIDER`), so the create cascade, the withdrawals and the reconciler reach it as
 * they reach any provider. The matching service is our own, but it is reached over the
 * network like a provider, and it is answered like one (docs/architecture.md, "Pool"):
 *
 * - `create`, a payin: `Admit` (one slot of its amount). An admitted slot is an acceptance
 *   with the payout's destination as requisites, a receipt required and the slot's expiry;
 *   a refusal (`amount_unavailable`, an invalid request) or an unusable slot is a decline.
 *   No answer (transport error, timeout, 5xx) is `unknown`, never a decline: a slot may
 *   have been reserved, so the cascade withdraws it (`cancel`) as at any provider.
 * - `create`, a payout: the pool takes every payout, so it is accepted. It is put into the
 *   pool (`AddPayout`) only once the create has committed it `pending` under the pool
 *   (`recorded`, right after that commit, before the create answers), never before: a
 *   payout the pool kept open while a take-over recorded it at another provider would be
 *   paid twice. Should that call fail or the process die first, the `payout.pending`
 *   event's consumer puts it in (`operations-pool-entries`), and the reconciler after it.
 * - `status`: the pool payout read (`GetPoolPayout`): open or handed off is pending,
 *   completed is a result with one leg per contribution, absent is `not_found`. Only
 *   payouts are asked: matching has no slot read, and a payin's unknown answer is
 *   resolved by its withdrawal.
 * - `cancel`: `ReleaseSlot` (the payin's amount goes back to the payout's free remainder).
 * - `parseCallback`: the pool sends no callbacks; every one is refused.
 */
export class PoolConnector implements Connector {
  readonly #pool: PoolDeps;

  constructor(pool: PoolDeps) {
    this.#pool = pool;
  }

  async create(
    _provider: unknown,
    request: ProviderCreateRequest,
    signal: AbortSignal,
  ): Promise<ProviderAnswer> {
    const row = {
      id: request.operationId,
      type: request.direction === "payin" ? ("payment" as const) : ("payout" as const),
      shop_id: request.shopId,
      method: request.method,
      currency: request.currency,
      expected_amount: request.amount,
      number: request.number ?? null,
      name: request.name ?? null,
      bankname: request.bankname ?? null,
      created_at: new Date(),
      version: String(request.generation ?? 0n),
    };
    if (row.type === "payout") return { outcome: "accepted", receiptRequired: false };
    try {
      return await poolAnswer(this.#pool, row, signal);
    } catch (err) {
      if (isRefusal(err)) return { outcome: "declined", reason: ConnectError.from(err).rawMessage };
      return { outcome: "unknown", reason: `matching did not answer: ${String(err)}` };
    }
  }

  /** A payout recorded `pending` under the pool enters it (`AddPayout`, idempotent). */
  async recorded(_provider: unknown, row: OperationRow): Promise<void> {
    if (row.type !== "payout" || row.provider !== SELF_MATCHING || row.status !== "pending") return;
    await addPayout(this.#pool, row).catch((err: unknown) =>
      this.#pool.logger.warn(
        { operationId: row.id, err: String(err) },
        "pool: payout not put into the pool yet; its pending event puts it in",
      ),
    );
  }

  parseCallback(): never {
    throw new CallbackRejectedError("the self-matching pool sends no callbacks");
  }

  async status(_provider: unknown, operationId: string, signal: AbortSignal): Promise<ProviderStatus> {
    try {
      const { payout } = await this.#pool.matching.getPoolPayout({ operationId }, { signal });
      if (!payout) return { status: "unknown", reason: "matching answered no payout" };
      if (payout.status !== "completed") return { status: "pending" };
      return {
        operationId,
        status: "completed",
        legs: payout.contributions.map((c) => ({
          id: c.id,
          amount: c.amount,
          completedAt: new Date(c.completedAt),
        })),
      };
    } catch (err) {
      if (matchingRefusal(err) === "not_found") return { status: "not_found" };
      return { status: "unknown", reason: `matching did not answer: ${String(err)}` };
    }
  }

  async cancel(_provider: unknown, operationId: string, signal: AbortSignal): Promise<WithdrawAnswer> {
    try {
      // An unknown slot and a confirmed one (logged: money moved) end here too. The release
      // carries the payin's version now, above its withdrawn attempt's: should that
      // attempt's Admit reach matching after this, it reserves nothing.
      const op = await this.#pool.store.findAnyById(operationId);
      await releaseSlot(this.#pool, operationId, "cancelled", op?.version, signal);
      return { outcome: "withdrawn" };
    } catch (err) {
      return { outcome: "unknown", reason: `matching did not answer: ${String(err)}` };
    }
  }
}

/** A definite "no" of matching (an error it answered with a code), as opposed to no answer. */
function isRefusal(err: unknown): boolean {
  const code = ConnectError.from(err).code;
  return code === Code.FailedPrecondition || code === Code.InvalidArgument;
}
