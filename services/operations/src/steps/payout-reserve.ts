import type { Client } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import type { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { DependencyUnavailableError } from "../domain/lifecycle/errors.ts";
import { type OperationRow, toOperation } from "../domain/model.ts";

/**
 * A payout's ledger reserve around its routing (docs/architecture.md, Create):
 *
 * - **Before any provider is asked** the create posts the reserve synchronously
 *   (`LedgerService.ReservePayout`, "Reserving a payout debits balance and credits
 *   reserved at once"), under the routing row's version. A shop thus cannot spend, while
 *   the answer is unresolved (503), money a provider may already be paying out. Should
 *   the ledger not answer, no provider is asked and the create answers 503 with the row
 *   still `routing`: whoever drives it next (a retry, the reconciler) reserves first too.
 * - **A refusal** (no provider accepted; never announced) releases the reserve
 *   synchronously before it is answered (`LedgerService.ReleaseRefusedPayout`,
 *   `releaseRefusedReserve`): a refused payout is not in flight, so a balance read right
 *   after the refusal shows `reserved` back where it was. The refusal's own transaction
 *   also queues the internal event `payout.refused` (refusals.ts), the same posting, as the
 *   durable fallback: a process that dies right after the refusal, or a ledger that did
 *   not answer the call, still releases it, and whichever comes second posts nothing. A
 *   retry of the refusal routes under a newer version, so its reserve is posted again and
 *   a late release of the earlier refusal does not touch it.
 * - Everything after acceptance is the payout events' (`payout.pending` reserves if the
 *   create's posting did not happen, `payout.rejected` releases, `payout.completed`
 *   consumes).
 */

/**
 * Posts a payout's reserve before its routing asks anyone; idempotent per routing (the
 * ledger posts once per operation version). Throws 503 `dependency_unavailable` when the
 * ledger did not confirm it, or answered that no reserve is held for this routing (a
 * stale driver: released by a newer refusal): no provider may be asked then.
 */
export async function reserveBeforeRouting(
  deps: { ledger: Client<typeof LedgerService>; attemptTimeoutMs: number; logger: Logger },
  payout: OperationRow,
  signal: AbortSignal,
): Promise<void> {
  const figures = toOperation(payout);
  let notHeld: boolean;
  try {
    ({ notHeld } = await deps.ledger.reservePayout(
      {
        shopId: payout.shop_id,
        operationId: payout.id,
        settlementAmount: figures.settlementAmount ?? "",
        settlementCurrency: figures.settlementCurrency ?? "",
        operationVersion: BigInt(payout.version),
      },
      { signal, timeoutMs: deps.attemptTimeoutMs },
    ));
  } catch (err) {
    deps.logger.warn(
      { operationId: payout.id, err: String(err) },
      "payout reserve not confirmed; no provider asked, the routing stays for a retry or the reconciler",
    );
    throw new DependencyUnavailableError(
      "the payout could not be reserved yet; retry the same request or read the state later",
    );
  }
  if (notHeld) {
    // Released at a newer version (a refusal after this driver's routing began) or
    // completed: this routing is stale, and no provider may be asked without a reserve.
    deps.logger.warn(
      { operationId: payout.id, version: payout.version },
      "payout reserve not held for this routing (released by a newer one); no provider asked",
    );
    throw new DependencyUnavailableError(
      "the payout changed meanwhile; retry the same request or read the state later",
    );
  }
}

/**
 * Releases a refused payout's reserve before the refusal is answered, under the refused
 * row's version (the `payout.refused` event's). Best effort: a ledger that does not
 * answer leaves the release to that event, queued with the refusal; the refusal is still
 * answered.
 */
export async function releaseRefusedReserve(
  deps: { ledger: Client<typeof LedgerService>; attemptTimeoutMs: number; logger: Logger },
  refused: OperationRow,
): Promise<void> {
  try {
    await deps.ledger.releaseRefusedPayout(
      { shopId: refused.shop_id, operationId: refused.id, operationVersion: BigInt(refused.version) },
      { timeoutMs: deps.attemptTimeoutMs },
    );
  } catch (err) {
    deps.logger.warn(
      { operationId: refused.id, err: String(err) },
      "refused payout's reserve not released at once; its payout.refused event releases it",
    );
  }
}
