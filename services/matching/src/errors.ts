import { Code, type ConnectError, failure } from "@gw/rpc";
import type { PoolRefusal } from "./pool.ts";

/**
 * The matching service's error catalogue: every error it answers with, named once with its
 * Connect code (the edge maps it to the HTTP status), its public code and its message. The
 * rest of the service raises these; no other file calls `failure(`
 * (tooling/scripts/check-inline-failures.ts).
 */

/** INVALID_ARGUMENT `validation_failed`: a request field is missing or malformed. */
export const invalid = (field: string, message: string): ConnectError =>
  failure(Code.InvalidArgument, "validation_failed", message, field);

/** NOT_FOUND `not_found`: the payout is not in the pool. */
export const payoutNotInPool = (): ConnectError =>
  failure(Code.NotFound, "not_found", "payout not in the pool");

/** UNAVAILABLE `read_capacity_exhausted`: this replica is already running its one pool read. */
export const readCapacityExhausted = (): ConnectError =>
  failure(Code.Unavailable, "read_capacity_exhausted", "a pool read is already in progress");

/** UNAVAILABLE `dependency_unavailable`: a pool read ran past its budget (and was cancelled). */
export const readBudgetExceeded = (): ConnectError =>
  failure(Code.Unavailable, "dependency_unavailable", "the pool read exceeded its budget");

/** The answer to a refusal of the pool (pool.ts), one per kind. */
export function poolRefused(r: PoolRefusal): ConnectError {
  switch (r.refused) {
    case "idempotency_conflict":
      return failure(
        Code.FailedPrecondition,
        "idempotency_conflict",
        "the payout is already in the pool with another shop, method, currency or amount",
      );
    case "amount_unavailable":
      return failure(
        Code.FailedPrecondition,
        "amount_unavailable",
        "no pool payout can take this amount now",
      );
    case "not_found":
      return failure(Code.NotFound, "not_found", "no slot for this payin");
    case "released":
      return failure(
        Code.FailedPrecondition,
        "slot_settled",
        "the payin's slot was released by this routing attempt or a newer one",
      );
    case "slot_settled":
      return failure(Code.FailedPrecondition, "slot_settled", `the slot is already ${r.slot.status}`);
  }
}
