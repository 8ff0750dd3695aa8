import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "@gw/log";
import type { Connector, ProviderConfig, ProviderResult } from "./connectors/connector.ts";

/**
 * What asking a provider about an operation whose create answer was unknown settled:
 * - `taken`: the provider holds it (pending, or already with a result the caller applies
 *   once the operation is recorded as that provider's);
 * - `passed`: a definite "no" (never received, rejected, withdrawn): the cascade may go on;
 * - `unresolved`: no definite answer before the deadline: nobody else may be asked yet.
 */
export type Resolution =
  | { outcome: "taken"; result?: ProviderResult }
  | { outcome: "passed"; reason: string }
  | { outcome: "unresolved"; reason: string };

/** What a provider's longest request is taken to exceed by, when no quiet period is configured. */
export const QUIET_MARGIN_MS = 5_000;

/**
 * How long after a create request was sent a provider's `not_found` means "never
 * received": longer than the provider's longest request, since a slow provider may still
 * record a create it received before our attempt timed out. `PROVIDER_NOT_FOUND_QUIET_MS`,
 * or the attempt timeout plus `QUIET_MARGIN_MS`.
 */
export const quietPeriodMs = (deps: { attemptTimeoutMs: number; notFoundQuietMs?: number | undefined }) =>
  deps.notFoundQuietMs ?? deps.attemptTimeoutMs + QUIET_MARGIN_MS;

/** First wait between two status questions; doubles up to `MAX_BACKOFF_MS`. */
const FIRST_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 2_000;

/**
 * Asks `provider` for the status of `operationId` until it gives a definite answer or
 * `deadline` (this process's clock: it bounds only this caller's wait) passes, with a
 * doubling backoff between questions. Each question is bounded by `attemptTimeoutMs` and
 * by what is left of the deadline. `not_found` is definite only from `quietUntil` on (the
 * create request's sending plus `quietPeriodMs`): before, the create may still be on its
 * way, so it is asked again like an unknown answer. Never rejects.
 */
export async function resolveUnknown(
  deps: { logger: Logger; attemptTimeoutMs: number },
  connector: Connector,
  provider: ProviderConfig,
  operationId: string,
  deadline: number,
  quietUntil: number,
  signal: AbortSignal,
): Promise<Resolution> {
  let backoffMs = FIRST_BACKOFF_MS;
  let reason = "not asked: no time left";
  for (;;) {
    const remaining = deadline - Date.now();
    if (remaining <= 0 || signal.aborted) return { outcome: "unresolved", reason };
    const asked = Date.now();
    const answer = await connector.status(
      provider,
      operationId,
      AbortSignal.any([signal, AbortSignal.timeout(Math.min(remaining, deps.attemptTimeoutMs))]),
    );
    switch (answer.status) {
      case "pending":
        return { outcome: "taken" };
      case "completed":
        return { outcome: "taken", result: { ...answer, operationId } };
      case "rejected":
        return { outcome: "passed", reason: "rejected" };
      case "not_found":
        // Asked before the quiet period ended, `not_found` may be a create still queued.
        if (asked >= quietUntil) return { outcome: "passed", reason: "never received" };
        reason = "not received yet: the create may still be on its way";
        break;
      case "withdrawn":
        return { outcome: "passed", reason: "withdrawn" };
      case "unknown":
        reason = answer.reason;
        deps.logger.info(
          { operationId, provider: provider.name, reason },
          "provider status unknown; asking again",
        );
    }
    const wait = Math.min(backoffMs, deadline - Date.now());
    if (wait > 0) await sleep(wait, undefined, { signal }).catch(() => {});
    backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
  }
}
