import { setTimeout as sleep } from "node:timers/promises";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { amountProblem } from "@gw/api";
import { type Decimal, parseRequestAmount } from "@gw/money";
import type { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import type {
  FlexibleLinkResponseSchema,
  GetFlexibleLinkRequest,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import type { CreateInput } from "../../domain/create-request.ts";
import { matchingRefusal } from "../../domain/dependency-errors.ts";
import {
  DependencyUnavailableError,
  FlexibleLinkNotFoundError,
  ValidationError,
} from "../../domain/lifecycle/errors.ts";
import { credentialMatches } from "../../domain/link-credential.ts";
import { toOperation } from "../../domain/model.ts";
import type { LinkRow } from "../../repository/links.ts";
import type { OperationStore } from "../../repository/operations.ts";
import { type CreateDeps, claimAndRoute } from "../../steps/create.ts";
import { SELF_MATCHING, slotGeneration } from "../../steps/pool.ts";

/**
 * Flexible payment links (`POST /v1/payment/link/flexible`) and the pool coverage the
 * availability endpoints report. See docs/architecture.md, "Flexible links".
 *
 * A link lives in `operations.flexible_links` under the operation id derived from (shop,
 * merchant_operation_id), the id its payment gets. Its page credential `k` is
 * HMAC-SHA256(FLEXIBLE_LINK_SECRET, id) in base64url (256 bits): a retry computes the same
 * `k` and answers the same URL, while only sha256(k) is stored and a presented `k` is
 * compared with it in constant time. `k` is never logged.
 */

export interface FlexibleDeps extends CreateDeps {
  store: OperationStore;
  matching: Client<typeof MatchingService>;
  linkLifetimeMs: number;
  /** The HMAC key of `k`. */
  linkSecret: Buffer;
}

export type Answer = MessageInitShape<typeof FlexibleLinkResponseSchema>;

/** The widest bounds a request amount can have: what an absent bound means. */
export const LOWEST = "0.01";
export const HIGHEST = "9999999999999999.99";
export const READ_TIMEOUT_MS = 2_500;

export const invalid = (field: string, message: string) => new ValidationError(message, field);

/** An amount field under libs/api's rule (`amountProblem`), its message included. */
export function amountOf(text: string | undefined, field: string): Decimal {
  const problem = amountProblem(field, text ?? "");
  if (problem) throw invalid(field, problem);
  return parseRequestAmount(text ?? "") as Decimal;
}

/** The coverage of a payin route by the pool: `full` only the pool, `partial` the pool and others, `none` no pool. */
export function coverageOf(payin: string[]): "full" | "partial" | "none" {
  if (!payin.includes(SELF_MATCHING)) return "none";
  return payin.every((n) => n === SELF_MATCHING) ? "full" : "partial";
}

export interface FlexibleInput {
  shopId: string;
  merchantId: string;
  mop: string;
  clientId: string;
  clientIp: string | undefined;
  method: string;
  currency: string;
  recommended: string;
  min: string | undefined;
  max: string | undefined;
}

export const createInput = (link: FlexibleInput, amount: string): CreateInput => ({
  type: "payment",
  shopId: link.shopId,
  merchantId: link.merchantId,
  mop: link.mop,
  clientId: link.clientId,
  clientIp: link.clientIp,
  method: link.method,
  amount,
  currency: link.currency,
  number: undefined,
  name: undefined,
  bankname: undefined,
});

export const inputOf = (row: LinkRow): FlexibleInput => ({
  shopId: row.shop_id,
  merchantId: row.merchant_id,
  mop: row.merchant_operation_id,
  clientId: row.client_id,
  clientIp: row.client_ip ?? undefined,
  method: row.method,
  currency: row.currency,
  recommended: row.recommended_amount,
  min: row.min_amount ?? undefined,
  max: row.max_amount ?? undefined,
});

export function linkMessage(row: LinkRow) {
  const expired = row.status === "amount_selection" && row.expires_at.getTime() <= Date.now();
  return {
    operationId: row.operation_id,
    status: expired ? "expired" : row.status,
    method: row.method,
    currency: row.currency,
    recommendedAmount: row.recommended_amount,
    minAmount: row.min_amount ?? undefined,
    maxAmount: row.max_amount ?? undefined,
    expiresAt: row.expires_at.toISOString(),
    picker: row.picker,
  };
}

/** Amounts that can be admitted now within the link's bounds (advisory; a busy pool is UNAVAILABLE). */
export async function intervalsFor(
  d: FlexibleDeps,
  link: FlexibleInput,
): Promise<{ minAmount: string; maxAmount: string }[]> {
  const res = await d.matching.availability(
    {
      method: link.method,
      currency: link.currency,
      minAmount: link.min ?? LOWEST,
      maxAmount: link.max ?? HIGHEST,
      coverage: "full",
    },
    { timeoutMs: READ_TIMEOUT_MS },
  );
  return res.intervals.map((i) => ({ minAmount: i.minAmount, maxAmount: i.maxAmount }));
}

/**
 * Reserves `amount` for the link's payment id; true when admitted. A slot the id already
 * holds (an earlier attempt that died before creating the payment) is kept, whatever its
 * amount: `claimAndRoute` then creates the payment at that slot's amount.
 */
export async function admit(
  d: FlexibleDeps,
  link: FlexibleInput,
  id: string,
  amount: string,
): Promise<string | undefined> {
  try {
    const { slot } = await d.matching.admit(
      {
        payinId: id,
        shopId: link.shopId,
        method: link.method,
        currency: link.currency,
        amount,
        slotLifetimeMs: BigInt(d.pool?.slotLifetimeMs ?? 30 * 60_000),
      },
      { timeoutMs: READ_TIMEOUT_MS },
    );
    return slot?.status === "reserved" ? slot.amount : undefined;
  } catch (err) {
    if (matchingRefusal(err) === "amount_unavailable") return undefined;
    throw err;
  }
}

export function findLink(d: FlexibleDeps, id: string): Promise<LinkRow | undefined> {
  return d.store.links.find(id);
}

/** The stored answer of a link: what a retry of the create, or the page, sees. */
export async function answerOf(
  d: FlexibleDeps,
  row: LinkRow,
  k: string | undefined,
  replayed: boolean,
): Promise<Answer> {
  const op = row.status === "amount_selection" ? undefined : await d.store.findAnyById(row.operation_id);
  return {
    link: linkMessage(row),
    operation: op && op.status !== "routing" ? toOperation(op) : undefined,
    k,
    replayed,
  };
}

/**
 * How long one attempt may hold a link's claim: the create's budget and the matching
 * calls around it, with a margin. Waiting attempts wait as long.
 */
export const claimMs = (d: FlexibleDeps) => d.budgetMs + 3 * READ_TIMEOUT_MS + 5_000;

/** Waits a little for another attempt's claim to end; 503 once `until` has passed. */
export async function waitForClaim(until: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted || Date.now() >= until)
    throw new DependencyUnavailableError("the link is being decided; retry");
  await sleep(CLAIM_POLL_MS, undefined, { signal }).catch(() => {});
}
export const CLAIM_POLL_MS = 50;

/** The link behind `operation_id` + `k`, or NOT_FOUND (a wrong `k` looks like an unknown id). */
export async function authorised(d: FlexibleDeps, operationId: string, k: string): Promise<LinkRow> {
  const row = /^[0-9a-f-]{36}$/i.test(operationId) ? await findLink(d, operationId.toLowerCase()) : undefined;
  // Compare even without a row, so timing does not tell known ids apart.
  const ok = credentialMatches(k, row?.k_hash ?? "00".repeat(32));
  if (!row || !ok || !k || row.status === "deciding") throw new FlexibleLinkNotFoundError();
  return row;
}

/** The hosted page's read of a link, with what can be chosen now while in amount_selection. */
export async function getFlexibleLink(d: FlexibleDeps, req: GetFlexibleLinkRequest): Promise<Answer> {
  const row = await authorised(d, req.operationId, req.k);
  const answer = await answerOf(d, row, undefined, false);
  if (answer.link?.status === "amount_selection") answer.intervals = await intervalsFor(d, inputOf(row));
  return answer;
}

/**
 * Creates the payment of a slot the link holds. When the create fails and its payment
 * ended without the pool (recorded `rejected`: nobody accepted), the slot is released at
 * once, since no retry can use it (a retry replays that outcome). When no payment was
 * recorded, the slot stays for the retry, which decides again with the same slot; if no
 * retry comes, the reconciler releases it (`Reconciler`, undecided links without a payment).
 */
export async function createOrRelease(d: FlexibleDeps, input: CreateInput, signal: AbortSignal) {
  try {
    return await claimAndRoute(d, input, signal, { forLink: true });
  } catch (err) {
    const op = await d.store.findByMop(input.shopId, input.mop).catch(() => undefined);
    if (op && op.provider !== SELF_MATCHING && ["rejected", "cancelled"].includes(op.status))
      await d.matching
        .releaseSlot(
          {
            payinId: op.id,
            reason: op.status as "rejected" | "cancelled",
            generation: slotGeneration(op.version),
          },
          { timeoutMs: READ_TIMEOUT_MS },
        )
        .catch((e: unknown) =>
          d.logger.warn(
            { operationId: op.id, err: String(e) },
            "flexible: slot release failed; the reconciler releases it",
          ),
        );
    throw err;
  }
}
