import { setTimeout as sleep } from "node:timers/promises";
import type {
  Connector,
  ProviderAnswer,
  ProviderConfig,
  ProviderCreateRequest,
  ProviderResult,
  ProviderStatus,
  WithdrawAnswer,
} from "./connectors/connector.ts";
import { SELF_MATCHING } from "./connectors/pool-provider.ts";
import type { CreateDeps } from "./create-deps.ts";
import { type CascadeAnswer, NOT_FOUND_PATIENCE, nextAction } from "./domain/cascade.ts";
import type { EventStatements } from "./events.ts";
import type { Fact } from "./lifecycle/apply.ts";
import { DependencyUnavailableError, NoProviderAcceptedError } from "./lifecycle/errors.ts";
import type { OperationRow } from "./model.ts";
import { releaseRefusedReserve, reserveBeforeRouting } from "./payout-reserve.ts";
import { applyProviderResult } from "./provider-results.ts";
import { recordRefusal } from "./refusals.ts";
import type { DataPatch, OperationPatch } from "./repository/operations.ts";
import { recordPassedOver, withdrawalLeaseMs } from "./withdrawals.ts";

/**
 * A create's routing: the providers asked in order within one budget, the cascade
 * position stored as it goes, and the outcome recorded in one statement with its event
 * (docs/architecture.md, "Create", steps 4 and 5). Who claims or takes the row over is
 * create.ts's.
 */

type Accepted = {
  provider: ProviderConfig;
  answer: Extract<ProviderAnswer, { outcome: "accepted" }>;
  /** A result the provider already reached (found by the status question), applied once recorded. */
  result?: ProviderResult;
  /**
   * Whether the pool was on the route that found the provider, when that route is the only
   * one the operation ever had (its first attempt); unknown counts as on it.
   */
  poolOnRoute?: boolean;
};

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

/** A status read as the cascade takes it; `holds` when the provider holds the operation. */
function readStatus(
  provider: ProviderConfig,
  operationId: string,
  status: ProviderStatus,
): { answer: CascadeAnswer; holds?: Accepted } {
  switch (status.status) {
    case "pending":
      return { answer: "accepted", holds: takenBy(provider, undefined) };
    case "completed":
      return { answer: "accepted", holds: takenBy(provider, { ...status, operationId }) };
    case "rejected":
      return { answer: "declined" };
    case "withdrawn":
      return { answer: "withdrawn" };
    case "not_found":
      return { answer: "not_found" };
    case "unknown":
      return { answer: "unknown" };
  }
}

/**
 * A withdrawal's answer as the cascade takes it: `withdrawn` is a confirmed withdrawal
 * (the key is tombstoned there); a final result decides like a status read; `not_found`
 * (withdrawn nothing, durably) and `not_supported` say the provider offers no withdrawal
 * of a key it has no record of.
 */
function readWithdrawal(
  provider: ProviderConfig,
  operationId: string,
  withdrawal: WithdrawAnswer,
): { answer: CascadeAnswer; holds?: Accepted } {
  switch (withdrawal.outcome) {
    case "withdrawn":
      return { answer: "withdrawn" };
    case "final":
      return readStatus(provider, operationId, withdrawal.result);
    case "not_found":
    case "not_supported":
      return { answer: "no_withdrawal" };
    case "unknown":
      return { answer: "unknown" };
  }
}

/** A payout a provider was found holding by the status question: accepted by it. */
const takenBy = (provider: ProviderConfig, result: ProviderResult | undefined): Accepted => ({
  provider,
  answer: { outcome: "accepted", receiptRequired: false },
  result,
});

/**
 * Records that `name` gave a definite "no", so no later driver asks it again; with
 * `withdraw` (a payin whose answer there was unknown), its withdrawal there too.
 */
function passOver(deps: CreateDeps, row: OperationRow, name: string, reason: string, withdraw = false) {
  deps.logger.info({ operationId: row.id, provider: name, reason }, "provider passed over");
  return persist(
    deps,
    row,
    {
      routing_passed: [...new Set([...row.routing_passed, name])],
      routing_unresolved: row.routing_unresolved === name ? null : row.routing_unresolved,
    },
    { kind: "provider_declined", provider: name },
    withdraw ? name : undefined,
  );
}

/**
 * Writes the cascade position (no event: it is no state of the operation) with the
 * version check, and with it, in one transaction, the withdrawal at `withdrawAt`. A
 * concurrent change of the row (a cancel request) is re-read and the position written
 * again; a row another driver took over (another deadline) or that is no longer routing
 * ends this driver's work with a 503 (`unresolved`).
 */
async function persist(
  deps: CreateDeps,
  row: OperationRow,
  patch: Pick<OperationPatch, "routing_passed" | "routing_unresolved">,
  fact: Extract<Fact, { kind: "provider_declined" | "provider_unknown" }>,
  withdrawAt?: string,
): Promise<OperationRow> {
  let current = row;
  for (let attempt = 0; attempt < 10; attempt++) {
    const { row: next } = withdrawAt
      ? await deps.store.transaction(async (tx) => {
          const moved = await deps.store.applyFact(current, fact, { data: patch, tx });
          if (moved.row)
            await recordPassedOver(
              deps.store,
              tx,
              row.id,
              withdrawAt,
              withdrawalLeaseMs(deps.attemptTimeoutMs),
            );
          return moved;
        })
      : await deps.store.applyFact(current, fact, { data: patch });
    if (next) return next;
    const now = await deps.store.findAnyById(row.id);
    if (now?.status !== "routing" || !sameDeadline(now, row)) throw unresolved();
    current = now;
  }
  throw unresolved();
}

/** Whether `a` is still under the routing of the driver that holds `b` (a take-over moves the deadline). */
const sameDeadline = (a: OperationRow, b: OperationRow) =>
  a.routing_deadline?.getTime() === b.routing_deadline?.getTime();

/**
 * Writes the routing outcome, honouring a cancel that arrived meanwhile. Like `persist`,
 * it stops with a 503 (`unresolved`) once another driver has taken the row over (another
 * `routing_deadline`): the outcome is that driver's to record. With `withdrawAt`, a
 * cancellation is committed only together with the withdrawal at that provider.
 */
export async function record(
  deps: CreateDeps,
  claimed: OperationRow,
  accepted: Accepted | undefined,
  withdrawAt?: string,
): Promise<OperationRow> {
  let current = claimed;
  for (let attempt = 0; attempt < 10; attempt++) {
    let next: OperationRow | undefined;
    if (current.status !== "routing") return current;
    if (!accepted) {
      // Nobody accepted: refused, or cancelled when a cancel arrived meanwhile. What the
      // routing may hold (a payout's reserve, a payin's pool slot) is released by the
      // refusal's internal event, queued with it; a payout's reserve at once as well.
      next = await recordRefusal(
        deps.store,
        current,
        { routing_deadline: null },
        withdrawAt
          ? (tx) =>
              recordPassedOver(
                deps.store,
                tx,
                claimed.id,
                withdrawAt,
                withdrawalLeaseMs(deps.attemptTimeoutMs),
              )
          : undefined,
      );
      if (next && !current.cancel_requested) {
        // Released before the refusal is answered, as it was reserved before any provider
        // was asked; the event queued with the refusal stays the fallback.
        if (next.type === "payout" && next.status === "rejected") await releaseRefusedReserve(deps, next);
        throw notAccepted();
      }
    } else {
      const { provider, answer } = accepted;
      // Accepted: pending or awaiting confirmation, or cancelled when a cancel arrived
      // meanwhile (the cancel won: no requisites are ever stored, so none can be shown).
      const data: DataPatch = { routing_deadline: null };
      let statements: EventStatements = {};
      if (!current.cancel_requested) {
        data.expires_at = answer.expiresAt ?? null;
        if (current.type === "payment" && answer.requisites) {
          data.number = answer.requisites.number;
          data.name = answer.requisites.name ?? null;
          data.bankname = answer.requisites.bankname ?? null;
        }
        // Only a payin the pool was asked for (`Admit`, by this driver, an earlier one or
        // an earlier attempt, under a route with the pool) can have a slot there; its
        // event says whether that can be, so the pool's consumer skips the ones that
        // cannot (`poolPayinsSkip`) instead of opening a transaction for nothing. Only a
        // first attempt knows every route it had: any other may have been admitted
        // under a route since changed.
        if (current.type === "payment")
          statements = {
            poolMayHoldSlot:
              accepted.poolOnRoute !== false ||
              provider.name === SELF_MATCHING ||
              current.routing_passed.includes(SELF_MATCHING),
          };
      }
      ({ row: next } = await deps.store.applyFact(
        current,
        { kind: "provider_accepted", provider: provider.name, receiptRequired: answer.receiptRequired },
        { data, statements },
      ));
    }
    if (next) return next;
    current = (await deps.store.findAnyById(claimed.id)) ?? current;
    if (current.status === "routing" && !sameDeadline(current, claimed)) throw unresolved();
  }
  throw new DependencyUnavailableError("operation kept changing; retry");
}

/**
 * No decision yet: a provider's answer is still unknown (or another driver took the
 * routing over). The spec's 503, "retry or read": the operation goes on being resolved.
 */
export const unresolved = () =>
  new DependencyUnavailableError(
    "the provider's answer is not known yet; retry the same request or read the state later",
  );

export const notAccepted = () => new NoProviderAcceptedError();
