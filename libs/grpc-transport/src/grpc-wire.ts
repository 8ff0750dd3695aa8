/**
 * The two small pieces of the gRPC wire protocol the lean path needs beyond the status
 * trailers: the `grpc-timeout` header and the status of a response without
 * `grpc-status`. They were connect's `parseTimeout` and `codeFromHttpStatus` from
 * `@connectrpc/connect/protocol-grpc`, which connect marks "@private Internal code, does
 * not follow semantic versioning"; these are ours, with the same answers
 * (grpc-wire.unit.test.ts compares them).
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

/**
 * The longest delay a Node timer takes (about 24.8 days): a longer one fires after 1 ms
 * instead. A deadline further away than this gets no timer; it is as good as none.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A status message as `grpc-message` carries it (gRPC over HTTP/2, "Status-Message"):
 * UTF-8, with every byte outside printable ASCII (0x20 to 0x7E) and "%" percent-encoded,
 * nothing else. connect's `setTrailerStatus` uses encodeURIComponent, which also
 * encodes ":", ",", "/" and the like; grpc-js decodes with decodeURI, which leaves
 * those escaped, so its callers saw "not found%3A x" for "not found: x".
 */
export function encodeGrpcMessage(message: string): string {
  let plain = true;
  for (let i = 0; i < message.length; i++) {
    const c = message.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return message;
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out +=
      byte < 0x20 || byte > 0x7e || byte === 0x25
        ? `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
        : String.fromCharCode(byte);
  }
  return out;
}
