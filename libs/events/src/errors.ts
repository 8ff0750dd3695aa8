import { Code, type ConnectError, failure } from "@gw/rpc";
import {
  DeadLetterNotFoundError,
  DeadLetterResolvedError,
  DeadLetterRetryFailedError,
} from "./dead-letters.ts";

/**
 * The error catalogue of the dead-letter service every consuming service serves: each error
 * named once with its Connect code and public code. Nothing else in the package calls
 * `failure(` (tooling/scripts/check-inline-failures.ts).
 */

/** INVALID_ARGUMENT `validation_failed`: a request field is missing or malformed. */
export const invalid = (field: string, message: string): ConnectError =>
  failure(Code.InvalidArgument, "validation_failed", message, field);

/**
 * A dead letter's domain error as its gRPC answer: not found is NOT_FOUND, resolved or a
 * failed retry FAILED_PRECONDITION, each with its own code. Anything else passes unchanged.
 */
export function deadLetterFailure(err: unknown): unknown {
  if (err instanceof DeadLetterNotFoundError) return failure(Code.NotFound, err.code, err.message);
  if (err instanceof DeadLetterResolvedError || err instanceof DeadLetterRetryFailedError) {
    return failure(Code.FailedPrecondition, err.code, err.message);
  }
  return err;
}
