import { Decimal } from "@gw/money";
import type { PoolPayout } from "@gw/proto/gateway/matching/v1/matching_pb";
import { ConcurrentChangeError, StillRoutingError } from "../domain/lifecycle/errors.ts";
import { isTerminal, type OperationRow } from "../domain/model.ts";
import { SELF_MATCHING } from "../domain/providers.ts";
import type { Tx } from "../repository/db.ts";
import type { PoolDeps } from "./pool-deps.ts";
import { recordProviderFact } from "./provider-facts.ts";

/** A pool payout closed by matching: completed with its contributions, or handed off to the providers after the pool. */

/** Records the pool's contributions as legs of the payout (one receipt item each). */
async function recordContributions(pool: PoolDeps, tx: Tx, payoutId: string, payout: PoolPayout) {
  for (const c of payout.contributions) {
    await pool.store.insertLeg(tx, {
      id: c.id,
      operationId: payoutId,
      provider: SELF_MATCHING,
      providerLegId: `pool:${c.payinId}`,
      amount: c.amount,
      completedAt: c.completedAt,
    });
  }
}

/** Completes a payout with what was paid into it (the pool's contributions, plus any legs already recorded). */
async function completeWithLegs(pool: PoolDeps, tx: Tx, row: OperationRow) {
  // The pool reports its contributions, recorded as legs already: the payout completes
  // with what they add up to.
  const legs = (await pool.store.legs(row.id, tx)).map((l) => ({ id: l.id, amount: l.amount }));
  const { row: next } = await pool.store.applyFact(
    row,
    { kind: "provider_completed", provider: SELF_MATCHING, legs },
    { tx },
  );
  if (!next) throw new ConcurrentChangeError("payout changed concurrently; retry");
}

/**
 * The payout a closed pool payout (completed or handed off) belongs to, locked in `tx`,
 * when it is the pool's to apply: open and recorded under the pool. A payout still
 * `routing` throws (the event is redelivered, in the end dead-lettered for an operator):
 * its create has not recorded its provider yet. A payout recorded elsewhere (another
 * provider, or none) whose pool payout holds contributions is money the pool paid that no
 * payout accounts for: recorded as a `not_routed` provider fact of the pool (booked on
 * suspense for an operator), never dropped; contributions already legs of that payout (a
 * hand-off to that provider, applied before) are not.
 */
async function pooledPayout(pool: PoolDeps, tx: Tx, payout: PoolPayout): Promise<OperationRow | undefined> {
  const row = await pool.store.lock(payout.operationId, tx);
  if (row?.type !== "payout") {
    pool.logger.error({ operationId: payout.operationId }, "pool: closed pool payout unknown to operations");
    return undefined;
  }
  if (row.status === "routing") throw new StillRoutingError();
  if (row.provider === SELF_MATCHING) return isTerminal(row.status) ? undefined : row;
  // A payout the pool handed off to a provider holds the contributions as its legs
  // already (recordContributions): a stale or repeated hand-off is no new money.
  const legs = new Set((await pool.store.legs(row.id, tx)).map((l) => l.id));
  const unaccounted = payout.contributions.filter((c) => !legs.has(c.id));
  if (unaccounted.length === 0) return undefined;
  const paid = unaccounted.reduce((sum, c) => sum.plus(c.amount), new Decimal(0));
  pool.logger.error(
    { operationId: row.id, provider: row.provider, status: row.status, paid: paid.toFixed(2) },
    "pool: a pool payout closed for a payout recorded elsewhere",
  );
  if (paid.gt(0))
    await recordProviderFact(pool, tx, {
      provider: SELF_MATCHING,
      reference: row.id,
      operation: row,
      kind: "not_routed",
      providerStatus: "completed",
      legs: unaccounted.map((c) => ({
        id: c.id,
        amount: c.amount,
        completedAt: new Date(c.completedAt),
      })),
      direction: "payout",
    });
  return undefined;
}

/**
 * The pool says the payout is fully paid: it completes with one leg per contribution.
 * Idempotent (the row lock and the terminal check make the event and the direct path
 * apply once).
 */
export async function completePayout(pool: PoolDeps, payout: PoolPayout, outer?: Tx): Promise<void> {
  const run = async (tx: Tx) => {
    const row = await pooledPayout(pool, tx, payout);
    if (!row) return;
    await recordContributions(pool, tx, row.id, payout);
    await completeWithLegs(pool, tx, row);
  };
  if (outer) await run(outer);
  else await pool.store.transaction(run);
}

/**
 * The payout's window ended with a remainder (`handed_off_amount`): the pool's
 * contributions are recorded as legs, and the hand-off of the remainder to the providers
 * after `self_matching` in the shop's payout route (those configured for the method, in
 * route order) is recorded as a decision (`store.handoffs.record`). No provider is called here:
 * this runs in the consumer's (or the reconciler's) transaction, and `HandOffDriver`
 * asks the providers after it committed (see handoff.ts). The payout stays `pending`
 * under the provider that takes it and completes when its callback does, with the pool's
 * contributions plus the provider's legs as receipts. Without any candidate, nobody took
 * it (`nobodyTookIt`).
 */
export async function handOff(pool: PoolDeps, tx: Tx, payout: PoolPayout): Promise<void> {
  const row = await pooledPayout(pool, tx, payout);
  if (!row) return;
  await recordContributions(pool, tx, row.id, payout);
  const remainder = new Decimal(payout.handedOffAmount || "0");
  if (remainder.lte(0)) return completeWithLegs(pool, tx, row);
  const routing = await pool.store.routeWithProviders(row.shop_id, row.method ?? "", "payout");
  const names = routing?.names ?? [];
  const after = names.indexOf(SELF_MATCHING);
  const candidates =
    after < 0
      ? []
      : names.slice(after + 1).filter((_, i) => {
          const provider = routing?.providers[after + 1 + i];
          return (
            provider !== undefined &&
            pool.connectorFor(provider.kind) !== undefined &&
            provider.methods.includes(row.method ?? "")
          );
        });
  if (candidates.length === 0) return nobodyTookIt(pool, tx, row);
  await pool.store.handoffs.record(tx, row.id, remainder.toFixed(2), candidates);
}

/**
 * No provider took a payout's remainder: with contributions (recorded as its legs) it
 * completes as a self-matching partial (actual amount = what the pool paid, settled on
 * it, so the rest of the reserve returns to the shop); without, it is rejected and its
 * reserve released.
 */
export async function nobodyTookIt(pool: PoolDeps, tx: Tx, row: OperationRow): Promise<void> {
  const legs = await pool.store.legs(row.id, tx);
  if (legs.length > 0) return completeWithLegs(pool, tx, row);
  const { row: next } = await pool.store.applyFact(
    row,
    { kind: "provider_rejected", provider: SELF_MATCHING },
    { tx },
  );
  if (!next) throw new ConcurrentChangeError("payout changed concurrently; retry");
}
