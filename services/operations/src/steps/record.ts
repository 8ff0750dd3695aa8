import type { EventStatements } from "../domain/events.ts";
import type { Fact } from "../domain/lifecycle/apply.ts";
import { DependencyUnavailableError, NoProviderAcceptedError } from "../domain/lifecycle/errors.ts";
import type { OperationRow } from "../domain/model.ts";
import { SELF_MATCHING } from "../domain/providers.ts";
import type { DataPatch, OperationPatch } from "../repository/operations.ts";
import type { Accepted } from "./cascade-answers.ts";
import type { CreateDeps } from "./create-deps.ts";
import { releaseRefusedReserve } from "./payout-reserve.ts";
import { recordRefusal } from "./refusals.ts";
import { recordPassedOver, withdrawalLeaseMs } from "./withdrawals.ts";

/**
 * The cascade's writes: its position (a provider passed over, one left unresolved) with
 * the version check, and its outcome in one statement with its event.
 */

/**
 * Records that `name` gave a definite "no", so no later driver asks it again; with
 * `withdraw` (a payin whose answer there was unknown), its withdrawal there too.
 */
export function passOver(
  deps: CreateDeps,
  row: OperationRow,
  name: string,
  reason: string,
  withdraw = false,
) {
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
export async function persist(
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
