/**
 * The two small pieces of the gRPC wire protocol the lean path needs beyond the status
 * trailers: the `grpc-timeout` header and the status of a response without
 * `grpc-status`. They were connect's `parseTimeout` and `codeFromHttpStatus` from
 * `@connectrpc/connect/protocol-grpc`, which connect marks "@private Internal code, does
 * not follow semantic versioning"; these are ours, with the same answers
 * (grpc-wire.test.ts compares them).
 */
import { Code, ConnectError } from "@connectrpc/connect";

const TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 0.001, n: 0.000001 };

/**
 * A `grpc-timeout` value (1 to 8 digits and a unit, gRPC over HTTP/2, "Timeout") in
 * milliseconds, or INVALID_ARGUMENT for anything else.
 */
export function parseGrpcTimeout(value: string): number | ConnectError {
  const match = TIMEOUT.exec(value);
  if (match === null) {
    return new ConnectError(`protocol error: invalid grpc timeout value: ${value}`, Code.InvalidArgument);
  }
  return Number(match[1]) * (UNIT_MS[match[2] as string] as number);
}

/**
 * The code of a response that is not HTTP 200 or carries no `grpc-status`, after
 * https://github.com/grpc/grpc/blob/master/doc/http-grpc-status-mapping.md.
 */
export function codeFromHttpStatus(status: number): Code {
  switch (status) {
    case 400:
      return Code.Internal;
    case 401:
      return Code.Unauthenticated;
    case 403:
      return Code.PermissionDenied;
    case 404:
      return Code.Unimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return Code.Unavailable;
    default:
      return Code.Unknown;
  }
}
