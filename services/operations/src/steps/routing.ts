import { setTimeout as sleep } from "node:timers/promises";
import type { Connector, ProviderConfig, ProviderCreateRequest } from "../connectors/connector.ts";
import { type CascadeAnswer, NOT_FOUND_PATIENCE, nextAction } from "../domain/cascade.ts";
import type { OperationRow } from "../domain/model.ts";
import { SELF_MATCHING } from "../domain/providers.ts";
import { type Accepted, readStatus, readWithdrawal } from "./cascade-answers.ts";
import type { CreateDeps } from "./create-deps.ts";
import { reserveBeforeRouting } from "./payout-reserve.ts";
import { applyProviderResult } from "./provider-results.ts";
import { passOver, persist, record, unresolved } from "./record.ts";

/**
 * A create's routing: the providers asked in order within one budget, the cascade
 * position stored as it goes, and the outcome recorded in one statement with its event
 * (docs/architecture.md, "Create", steps 4 and 5). Who claims or takes the row over is
 * create.ts's and resume.ts's; the writes are record.ts's.
 */

/**
 * Tries the providers in order, from where the last driver stopped (`routing_passed`,
 * `routing_unresolved`); records the outcome. A payout's reserve is posted before any
 * provider is asked (`reserveBeforeRouting`), and its refusal releases it
 * (`recordRefusal`, as a payin's refusal releases a pool slot it may hold).
 *
 * What to do next is `nextAction`'s (domain/cascade.ts), from every answer each provider
 * gave so far and the budget left; this function asks, records the cascade position, and
 * asks again. A provider's `unknown` answer (timeout, reset, 5xx, unreadable) is never
 * taken for a decline, nor is `not_found` at any age. For a payout the provider is asked
 * its status, with backoff, until it answers definitely: pending or a completion makes
 * the payout that provider's; rejected lets the cascade go on; `not_found` gets its
 * withdrawal by key asked (`Connector.cancel`), and only a confirmed withdrawal (the
 * provider tombstoned the key: a late create there is refused) lets the cascade go on. A
 * provider without a withdrawal keeps the payout until it answers. Still unknown at the
 * end of the budget, the row stays `routing` with the provider in `routing_unresolved`,
 * and the create answers 503 (`unresolved`): a retry or the reconciler resolves it later
 * (past `PAYOUT_OPERATOR_HORIZON_MS`, an operator decides), never asking the next provider
 * first. A payin may go on at once: its withdrawal at that provider is recorded with the
 * pass-over, in one transaction, and asked at once (`recordPassedOver`,
 * `WithdrawalDriver.askNow`), so a process that dies in between still withdraws it.
 */
export async function route(
  deps: CreateDeps,
  claimed: OperationRow,
  providers: (ProviderConfig | undefined)[],
  names: string[],
  deadline: number,
  signal: AbortSignal,
  /**
   * The create that has just claimed the row: no earlier attempt (a dead driver, a refused
   * create, a link) can have asked the pool under another route.
   */
  firstAttempt = false,
): Promise<OperationRow> {
  let row = claimed;
  // A payout's reserve is on the balance before any provider can pay it out.
  if (row.type === "payout") await reserveBeforeRouting(deps, row, signal);
  const direction = row.type === "payment" ? "payin" : "payout";
  const reachable = await reachableProviders(deps, row, providers, names);
  const answers = new Map<string, CascadeAnswer[]>();
  // Definite noes of earlier drivers (declines, confirmed withdrawals, payins passed over).
  for (const name of row.routing_passed) answers.set(name, ["declined"]);
  // Taken over (see `drive`): the provider the previous driver could not settle comes first;
  // a whole budget has passed since the create was sent, so one more `not_found` is enough
  // patience before its withdrawal is asked (a pass shorter than the five answers' backoff
  // would otherwise never ask it).
  const takenOver = row.routing_unresolved !== null;
  if (row.routing_unresolved !== null) answers.set(row.routing_unresolved, ["unknown"]);
  /** What a provider found holding the operation answered (the create's, or `takenBy`). */
  const holds = new Map<string, Accepted>();
  let backoffMs = 0;
  let accepted: Accepted | undefined;
  for (;;) {
    const action = nextAction({
      route: [...reachable.keys()],
      answers,
      direction,
      budgetLeftMs: signal.aborted ? 0 : deadline - Date.now(),
      notFoundPatience: takenOver ? 1 : NOT_FOUND_PATIENCE,
    });
    if (action.kind === "refuse") break;
    if (action.kind === "unresolved") throw unresolved();
    const { provider, connector } = reachable.get(action.provider) as Reachable;
    const name = provider.name;
    const answered = (answer: CascadeAnswer) => answers.set(name, [...(answers.get(name) ?? []), answer]);
    const attempt = () =>
      AbortSignal.any([
        signal,
        AbortSignal.timeout(Math.max(1, Math.min(deadline - Date.now(), deps.attemptTimeoutMs))),
      ]);
    if (action.kind === "take") {
      accepted = holds.get(name);
      break;
    }
    if (action.kind === "pass_withdrawing") {
      // A payin may move on (nothing is paid out by our choosing another provider), but
      // the requisites the provider may have issued must stop taking money.
      row = await passOver(deps, row, name, "unknown, withdrawing", true);
      await deps.withdrawals?.askNow(row.id, name);
      answered("passed_withdrawing");
      continue;
    }
    if (action.kind === "create") {
      const answer = await connector.create(provider, createRequest(deps, row, name), attempt());
      if (answer.outcome === "accepted") {
        holds.set(name, { provider, answer });
        answered("accepted");
      } else if (answer.outcome === "declined") {
        answered("declined");
        row = await passOver(deps, row, name, `declined: ${answer.reason}`);
      } else {
        answered("unknown");
        deps.logger.warn(
          { operationId: row.id, provider: name, reason: answer.reason, direction },
          "provider did not answer the create",
        );
        // A payout is never offered to the next provider while this one may have taken it.
        if (direction === "payout")
          row = await persist(
            deps,
            row,
            { routing_unresolved: name },
            { kind: "provider_unknown", provider: name },
          );
        backoffMs = 0;
      }
      continue;
    }
    // The status question, or the withdrawal by key: with a doubling backoff between them.
    if (backoffMs > 0)
      await sleep(Math.min(backoffMs, Math.max(0, deadline - Date.now())), undefined, { signal }).catch(
        () => {},
      );
    backoffMs = Math.min(Math.max(FIRST_BACKOFF_MS, backoffMs * 2), MAX_BACKOFF_MS);
    if (action.kind === "status") {
      const status = await connector.status(provider, row.id, attempt());
      const read = readStatus(provider, row.id, status);
      if (read.holds) holds.set(name, read.holds);
      answered(read.answer);
      if (read.answer === "declined" || read.answer === "withdrawn")
        row = await passOver(deps, row, name, status.status);
      continue;
    }
    const withdrawal = await connector.cancel(provider, row.id, attempt(), direction);
    const read = readWithdrawal(provider, row.id, withdrawal);
    if (read.holds) holds.set(name, read.holds);
    answered(read.answer);
    if (read.answer === "declined" || read.answer === "withdrawn")
      row = await passOver(deps, row, name, `withdrawal: ${withdrawal.outcome}`);
    deps.logger.info(
      { operationId: row.id, provider: name, withdrawal: withdrawal.outcome },
      "payout not found at its provider; asked its withdrawal by key",
    );
  }
  const recorded = await record(
    deps,
    row,
    accepted && { ...accepted, poolOnRoute: firstAttempt ? names.includes(SELF_MATCHING) : undefined },
  );
  if (accepted && recorded.provider === accepted.provider.name)
    await deps.connectorFor(accepted.provider.kind)?.recorded?.(accepted.provider, recorded);
  if (accepted?.result && recorded.provider === accepted.provider.name) {
    const result = accepted.result;
    const provider = accepted.provider.name;
    await deps.store.transaction((tx) => applyProviderResult(deps, tx, provider, result, "reconciler"));
    return (await deps.store.findAnyById(recorded.id)) ?? recorded;
  }
  return recorded;
}

/** First wait between two status questions (or withdrawals) of one provider; doubles up to the max. */
const FIRST_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 2_000;

type Reachable = { provider: ProviderConfig; connector: Connector };

/**
 * The route's providers this create can ask, in order: configured, with a connector, for
 * the method. The provider a previous driver left unresolved comes first, read from the
 * configuration when the route no longer names it (it may hold the payout all the same).
 */
async function reachableProviders(
  deps: CreateDeps,
  row: OperationRow,
  providers: (ProviderConfig | undefined)[],
  names: string[],
): Promise<Map<string, Reachable>> {
  const reachable = new Map<string, Reachable>();
  const unresolvedName = row.routing_unresolved;
  if (unresolvedName !== null) {
    const provider = providers[names.indexOf(unresolvedName)] ?? (await deps.store.provider(unresolvedName));
    const connector = provider && deps.connectorFor(provider.kind);
    if (!provider || !connector) throw unresolved();
    reachable.set(unresolvedName, { provider, connector });
  }
  for (const [i, provider] of providers.entries()) {
    if (!provider) {
      // Unknown names take no payment.
      deps.logger.warn({ operationId: row.id, provider: names[i] }, "provider not available for routing");
      continue;
    }
    const connector = deps.connectorFor(provider.kind);
    if (!connector || !provider.methods.includes(row.method ?? "") || reachable.has(provider.name)) continue;
    reachable.set(provider.name, { provider, connector });
  }
  return reachable;
}

/** The create request of `row` to `provider`. */
const createRequest = (deps: CreateDeps, row: OperationRow, provider: string): ProviderCreateRequest => ({
  operationId: row.id,
  shopId: row.shop_id,
  direction: row.type === "payment" ? "payin" : "payout",
  method: row.method ?? "",
  amount: row.expected_amount ?? "",
  currency: row.currency ?? "",
  number: row.number ?? undefined,
  name: row.name ?? undefined,
  bankname: row.bankname ?? undefined,
  callbackUrl: `${deps.callbackBaseUrl}/callbacks/providers/${encodeURIComponent(provider)}`,
  generation: BigInt(row.version),
});
