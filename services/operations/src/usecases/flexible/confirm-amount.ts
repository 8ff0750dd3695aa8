import type { ConfirmFlexibleAmountRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import type { CreateInput } from "../../domain/create-request.ts";
import {
  DependencyUnavailableError,
  FlexibleLinkNotFoundError,
  NoProviderAcceptedError,
} from "../../domain/lifecycle/errors.ts";
import { type OperationRow, toOperation } from "../../domain/model.ts";
import type { LinkRow } from "../../repository/links.ts";
import { claimAndRoute } from "../../steps/create.ts";
import {
  type Answer,
  admit,
  amountOf,
  answerOf,
  authorised,
  claimMs,
  createInput,
  createOrRelease,
  type FlexibleDeps,
  findLink,
  inputOf,
  intervalsFor,
  invalid,
  linkMessage,
  waitForClaim,
} from "./link.ts";

/**
 * The payer confirmed an amount on the hosted page. Under a claim of the link (no lock
 * held across the calls to matching; a concurrent confirmation waits for it, then
 * answers its decision or decides again): an expired
 * link creates nothing and emits nothing (`expired`); an amount that can be admitted
 * creates the payment at that amount (`created`); one taken meanwhile answers
 * `amount_unavailable` with the amounts available now, or, when nothing is left, creates
 * the payment as `rejected` with the ordinary rejected event (`rejected`). A decided link
 * answers its decision again. A claim whose process died lapses after `claimMs`: the
 * next confirmation decides again (the payment, if one was created, is found by its key).
 */
export async function confirmFlexibleAmount(
  d: FlexibleDeps,
  req: ConfirmFlexibleAmountRequest,
  signal: AbortSignal,
): Promise<Answer> {
  const found = await authorised(d, req.operationId, req.k);
  const waitUntil = Date.now() + claimMs(d);
  for (;;) {
    const row = await d.store.links.claim(found.operation_id, "amount_selection", claimMs(d));
    if (!row) {
      const now = await findLink(d, found.operation_id);
      if (!now) throw new FlexibleLinkNotFoundError();
      if (now.status !== "amount_selection")
        return { ...(await answerOf(d, now, undefined, true)), outcome: now.status };
      await waitForClaim(waitUntil, signal);
      continue;
    }
    const claim = row.claim ?? "";
    try {
      return await confirmClaimed(d, row, claim, req, signal);
    } finally {
      await d.store.links.release(row.operation_id, claim).catch(() => {});
    }
  }
}

/** The confirmation of a link in `amount_selection` whose claim `claim` the caller holds. */
async function confirmClaimed(
  d: FlexibleDeps,
  row: LinkRow,
  claim: string,
  req: ConfirmFlexibleAmountRequest,
  signal: AbortSignal,
): Promise<Answer> {
  if (row.expires_at.getTime() <= Date.now())
    return { link: linkMessage(row), outcome: "expired", replayed: false } satisfies Answer;
  const amount = amountOf(req.amount, "amount");
  const input = inputOf(row);
  if ((input.min && amount.lt(input.min)) || (input.max && amount.gt(input.max)))
    throw invalid("amount", "amount must lie within the link's bounds");
  const chosen = amount.toFixed(2);
  const slotAmount = await admit(d, input, row.operation_id, chosen);
  if (slotAmount !== undefined) {
    const { row: op } = await createOrRelease(d, createInput(input, slotAmount), signal);
    if (!(await d.store.links.decide(row.operation_id, claim, "created")))
      throw new DependencyUnavailableError("link changed meanwhile; retry");
    return {
      link: linkMessage({ ...row, status: "created" }),
      operation: toOperation(op),
      outcome: "created",
      replayed: false,
    };
  }
  const intervals = await intervalsFor(d, input);
  if (intervals.length > 0)
    return {
      link: linkMessage(row),
      outcome: "amount_unavailable",
      intervals,
      replayed: false,
    } satisfies Answer;
  // Taken in the last moment and nothing left: the payment exists, rejected, with the
  // ordinary rejected event (a create nobody accepted records `rejected` without one).
  const op = await rejectedPayment(d, row.operation_id, claim, createInput(input, chosen), signal);
  return {
    link: linkMessage({ ...row, status: "rejected" }),
    operation: toOperation(op),
    outcome: "rejected",
    replayed: false,
  };
}

/**
 * Creates the payment through the ordinary path, which records it `rejected` without an
 * event, then announces it. The announcement is written in one short transaction (no
 * call out in it) with the link's move from `amount_selection` to `rejected`, conditional
 * on the caller's claim: it commits with that move or not at all, so a confirmation
 * retried after a failure announces the payment again only if the first announcement
 * rolled back, and exactly one `payment.rejected` is ever queued.
 */
async function rejectedPayment(
  d: FlexibleDeps,
  linkId: string,
  claim: string,
  input: CreateInput,
  signal: AbortSignal,
): Promise<OperationRow> {
  let admitted: OperationRow | undefined;
  try {
    ({ row: admitted } = await claimAndRoute(d, input, signal, { forLink: true })); // an amount freed meanwhile
  } catch (err) {
    if (!(err instanceof NoProviderAcceptedError)) throw err;
  }
  return d.store.transaction(async (tx) => {
    const row = admitted ?? (await d.store.findByMop(input.shopId, input.mop, tx));
    if (!row) throw new DependencyUnavailableError("payment not recorded; retry");
    if (!(await d.store.links.decide(linkId, claim, "rejected", tx)))
      throw new DependencyUnavailableError("link changed meanwhile; retry");
    if (admitted || row.status !== "rejected") return row;
    const { row: announced } = await d.store.applyFact(row, { kind: "refusal_announced" }, { tx });
    if (!announced) throw new DependencyUnavailableError("payment changed meanwhile; retry");
    return announced;
  });
}
