import { Code, ConnectError } from "@connectrpc/connect";
import type { PublicErrorCode } from "@gw/api";
import { type ErrorInfo, ErrorInfoSchema } from "@gw/proto/gateway/common/v1/common_pb";

export type { PublicErrorCode };

/**
 * A domain failure: a Connect error carrying the public code (one of libs/api's
 * `PublicErrorCode`) and the field as a detail. Services call it from their error
 * catalogues only (tooling/scripts/check-inline-failures.ts); the edge maps the Connect code
 * to the HTTP status of the spec's Errors table and puts the public code in the JSON body.
 */
export function failure(
  code: Code,
  publicCode: PublicErrorCode,
  message: string,
  field?: string,
): ConnectError {
  return new ConnectError(message, code, undefined, [
    { desc: ErrorInfoSchema, value: { code: publicCode, field: field ?? "" } },
  ]);
}

/** Reads the ErrorInfo detail back from an error a client received. */
export function errorInfo(err: unknown): ErrorInfo | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  return err.findDetails(ErrorInfoSchema)[0];
}

export { Code, ConnectError };
