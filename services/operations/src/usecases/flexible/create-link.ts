import { createHash } from "node:crypto";
import { flexibleLinkProblem } from "@gw/api";
import type { CreateFlexibleLinkRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { stringify } from "safe-stable-stringify";
import { conflict, operationIdFor } from "../../domain/create-request.ts";
import {
  DependencyUnavailableError,
  FlexibleRouteNotPoolError,
  RouteNotConfiguredError,
} from "../../domain/lifecycle/errors.ts";
import { linkCredential, sha256 } from "../../domain/link-credential.ts";
import { toOperation } from "../../domain/model.ts";
import type { LinkRow } from "../../repository/links.ts";
import { claimAndRoute } from "../../steps/create.ts";
import {
  type Answer,
  admit,
  amountOf,
  answerOf,
  claimMs,
  coverageOf,
  createInput,
  createOrRelease,
  type FlexibleDeps,
  type FlexibleInput,
  findLink,
  intervalsFor,
  invalid,
  linkMessage,
  waitForClaim,
} from "./link.ts";

/** Rules 1 to 3 of the spec, and the usual create fields: libs/api's `flexibleLinkProblem`, as the edge checks them. */
export function parseFlexible(req: CreateFlexibleLinkRequest): FlexibleInput {
  const shopId = req.scope?.shopId ?? "";
  const merchantId = req.scope?.merchantId ?? "";
  if (!shopId || !merchantId) throw invalid("scope", "scope is required");
  const problem = flexibleLinkProblem({
    merchant_operation_id: req.merchantOperationId,
    client_id: req.clientId,
    client_ip: req.clientIp || undefined,
    method: req.method,
    currency: req.currency,
    recommended_amount: req.recommendedAmount,
    min_amount: req.minAmount,
    max_amount: req.maxAmount,
  });
  if (problem) throw invalid(problem.field, problem.message);
  const recommended = amountOf(req.recommendedAmount, "recommended_amount");
  const min = req.minAmount === undefined ? undefined : amountOf(req.minAmount, "min_amount");
  const max = req.maxAmount === undefined ? undefined : amountOf(req.maxAmount, "max_amount");
  return {
    shopId,
    merchantId,
    mop: req.merchantOperationId,
    clientId: req.clientId,
    clientIp: req.clientIp || undefined,
    method: req.method,
    currency: req.currency,
    recommended: recommended.toFixed(2),
    min: min?.toFixed(2),
    max: max?.toFixed(2),
  };
}

/** `POST /v1/payment/link/flexible`. */
export async function createFlexibleLink(
  d: FlexibleDeps,
  req: CreateFlexibleLinkRequest,
  signal: AbortSignal,
) {
  const input = parseFlexible(req);
  const routing = await d.store.routeWithProviders(input.shopId, input.method, "payin");
  if (!routing || routing.names.length === 0) throw new RouteNotConfiguredError("payin", input.method);
  if (coverageOf(routing.names) !== "full") throw new FlexibleRouteNotPoolError();
  if (!req.optIn) {
    // Rule 4: no picker, an ordinary payment for the recommended amount.
    const { row, replayed } = await claimAndRoute(d, createInput(input, input.recommended), signal, {
      forLink: true,
    });
    return {
      link: {
        operationId: row.id,
        status: "ordinary",
        method: input.method,
        currency: input.currency,
        recommendedAmount: input.recommended,
        picker: req.picker,
      },
      operation: toOperation(row),
      replayed,
    } satisfies Answer;
  }

  const id = operationIdFor(input.shopId, input.mop);
  const { shopId: _s, merchantId: _m, ...body } = input;
  const hash = createHash("sha256")
    .update(stringify({ flexible: true, ...body }) ?? "")
    .digest("hex");
  const k = linkCredential(d.linkSecret, id);
  const replay = async (row: LinkRow) => {
    if (row.request_hash !== hash) throw conflict();
    return answerOf(d, row, k, true);
  };

  const existing = await findLink(d, id);
  if (existing && existing.status !== "deciding") return replay(existing);
  if (existing && existing.request_hash !== hash) throw conflict();
  if (!existing) {
    // The key belongs to an ordinary create (or a cancel placeholder): not a link.
    if (await d.store.findByMop(input.shopId, input.mop)) throw conflict();
    // The link row is committed first, `deciding`: it holds the key from now on, so an
    // attempt that fails after the pool's Admit leaves a link that a retry with the same
    // body decides again (reusing the slot and any payment of that attempt), never an
    // operation row without its link, which answered idempotency_conflict.
    await d.store.links.insert(
      {
        operation_id: id,
        shop_id: input.shopId,
        merchant_id: input.merchantId,
        merchant_operation_id: input.mop,
        request_hash: hash,
        client_id: input.clientId,
        client_ip: input.clientIp ?? null,
        method: input.method,
        currency: input.currency,
        recommended_amount: input.recommended,
        min_amount: input.min ?? null,
        max_amount: input.max ?? null,
        picker: req.picker || "amount",
        k_hash: sha256(k).toString("hex"),
      },
      d.linkLifetimeMs,
    );
  }

  // The decision is taken under a claim of the link (one committed statement; no lock is
  // held across the calls to matching): a concurrent attempt waits for it and replays
  // it. A failure ends the claim and leaves the link `deciding`; a claim whose process
  // died lapses after `claimMs` and the next attempt decides again.
  const waitUntil = Date.now() + claimMs(d);
  for (;;) {
    const row = await d.store.links.claim(id, "deciding", claimMs(d));
    if (!row) {
      const now = await findLink(d, id);
      if (!now) throw new DependencyUnavailableError("create raced; retry");
      if (now.status !== "deciding") return replay(now);
      if (now.request_hash !== hash) throw conflict();
      await waitForClaim(waitUntil, signal);
      continue;
    }
    const claim = row.claim ?? "";
    try {
      if (row.request_hash !== hash) throw conflict();
      const decided = await decideLink(d, input, row, k, signal);
      if (await d.store.links.decide(id, claim, decided.status)) return decided.answer;
      // The claim lapsed and another attempt decided meanwhile: its decision stands.
      const now = await findLink(d, id);
      if (!now || now.status === "deciding") throw new DependencyUnavailableError("create raced; retry");
      return replay(now);
    } finally {
      await d.store.links.release(id, claim).catch(() => {});
    }
  }
}

/** A `deciding` link's decision (its caller holds the claim): created, amount_selection or rejected. */
async function decideLink(
  d: FlexibleDeps,
  input: FlexibleInput,
  row: LinkRow,
  k: string,
  signal: AbortSignal,
): Promise<{ status: LinkRow["status"]; answer: Answer }> {
  const decided = (status: LinkRow["status"]) => linkMessage({ ...row, status });
  // An earlier attempt that got as far as the payment: that payment is the outcome
  // (replayed, still routing, or its error again), at the amount it was created with.
  const earlier = await d.store.findByMop(input.shopId, input.mop);
  const slotAmount = earlier?.expected_amount ?? (await admit(d, input, row.operation_id, input.recommended));
  if (slotAmount !== undefined) {
    const { row: op } = await createOrRelease(d, createInput(input, slotAmount), signal);
    return {
      status: "created",
      answer: { link: decided("created"), operation: toOperation(op), k, replayed: false },
    };
  }
  const intervals = await intervalsFor(d, input);
  if (intervals.length === 0)
    return { status: "rejected", answer: { link: decided("rejected"), k, replayed: false } };
  return {
    status: "amount_selection",
    answer: { link: decided("amount_selection"), k, intervals, replayed: false },
  };
}
