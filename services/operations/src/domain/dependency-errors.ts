import { Code, ConnectError, errorInfo } from "@gw/rpc";

/**
 * Other services' refusals, read once, here, at the ports to them. They cross the wire
 * as a Connect code and the public code of their ErrorInfo; the use cases branch on what
 * these functions answer, never on an error's text or code themselves. The service's own
 * errors are domain errors (`lifecycle/errors.ts`), mapped to Connect codes once by the
 * catalogue.
 */

/** What the matching service refused a slot call for, when it refused one. */
export type MatchingRefusal = "amount_unavailable" | "slot_settled" | "not_found";

/** The matching service's refusal carried by `err`, or undefined for any other failure. */
export function matchingRefusal(err: unknown): MatchingRefusal | undefined {
  const code = errorInfo(err)?.code;
  if (code === "amount_unavailable" || code === "slot_settled" || code === "not_found") return code;
  if (err instanceof ConnectError && err.code === Code.NotFound) return "not_found";
  return undefined;
}

/**
 * The ledger's refusal of a quote that the merchant can act on (pricing missing, a field
 * it rejects), to answer as the ledger gave it; undefined for anything else (retry later).
 */
export function ledgerRefusal(err: unknown): ConnectError | undefined {
  const e = ConnectError.from(err);
  return errorInfo(e) && (e.code === Code.FailedPrecondition || e.code === Code.InvalidArgument)
    ? e
    : undefined;
}

/**
 * The receipts service's refusal carried by `err`, which the caller can act on and which
 * passes through as it came (an invalid file, a review in a state that does not take it,
 * `noReview`: no review of that operation), or undefined when it did not answer usefully.
 */
export function receiptsRefusal(err: unknown): { err: ConnectError; noReview: boolean } | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  if (err.code !== Code.InvalidArgument && err.code !== Code.FailedPrecondition && err.code !== Code.NotFound)
    return undefined;
  return { err, noReview: err.code === Code.NotFound };
}
