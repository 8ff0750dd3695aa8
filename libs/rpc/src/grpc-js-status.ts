import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AnySchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, decodeBinaryHeader, encodeBinaryHeader } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { type Status, StatusSchema } from "@gw/proto/google/rpc/status_pb";

/**
 * Errors and metadata between connect's objects and @grpc/grpc-js's on the internal hop.
 * A ConnectError's details travel as a google.rpc.Status in `grpc-status-details-bin`,
 * as connect-node and every other gRPC stack send them, so the edge still finds the
 * ErrorInfo (public code and field) of a domain error behind its status code.
 */

const DETAILS_KEY = "grpc-status-details-bin";
const TYPE_PREFIX = "type.googleapis.com/";

/** Connect headers as gRPC metadata; `-bin` values are base64 text in connect's headers. */
export function toMetadata(headers: Headers | undefined, into = new grpc.Metadata()): grpc.Metadata {
  if (headers === undefined) return into;
  for (const [key, value] of headers) {
    if (key.endsWith("-bin")) into.add(key, Buffer.from(decodeBinaryHeader(value)));
    else into.add(key, value);
  }
  return into;
}

/** gRPC metadata as connect headers (binary values as base64 text, as connect has them). */
export function toHeaders(metadata: grpc.Metadata | undefined): Headers {
  const headers = new Headers();
  if (metadata === undefined) return headers;
  for (const [key, values] of Object.entries(metadata.toJSON())) {
    for (const value of values)
      headers.append(key, typeof value === "string" ? value : encodeBinaryHeader(value));
  }
  return headers;
}

/**
 * The status a server answers for an error thrown by a handler or an interceptor. A
 * ConnectError keeps its code, message, metadata and details; anything else is INTERNAL
 * "internal error", its cause left to the logs.
 */
export function statusOf(err: unknown, trailer?: Headers): Partial<grpc.StatusObject> {
  const error = err instanceof ConnectError ? err : new ConnectError("internal error", Code.Internal);
  const metadata = toMetadata(trailer);
  toMetadata(error.metadata, metadata);
  metadata.remove(DETAILS_KEY);
  if (error.details.length > 0) {
    const details = error.details.map((d) =>
      create(AnySchema, {
        typeUrl: TYPE_PREFIX + ("desc" in d ? d.desc.typeName : d.type),
        value: "desc" in d ? toBinary(d.desc, create(d.desc, d.value)) : d.value,
      }),
    );
    const status = create(StatusSchema, { code: error.code, message: error.rawMessage, details });
    metadata.set(DETAILS_KEY, Buffer.from(toBinary(StatusSchema, status)));
  }
  return { code: error.code as number as grpc.status, details: error.rawMessage, metadata };
}

/** The ConnectError of a failed call, with the details of its `grpc-status-details-bin`. */
export function errorOf(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  const status = err as Partial<grpc.StatusObject> | undefined;
  if (typeof status?.code !== "number") return ConnectError.from(err, Code.Internal);
  const code = status.code >= 1 && status.code <= 16 ? (status.code as number as Code) : Code.Unknown;
  const metadata = toHeaders(status.metadata ?? undefined);
  const bin = status.metadata?.get(DETAILS_KEY)[0];
  let parsed: Status | undefined;
  try {
    if (bin instanceof Buffer) parsed = fromBinary(StatusSchema, bin);
  } catch {
    // Details that do not parse are left out; the code and message still stand.
  }
  // The message inside the details is the one the server meant: grpc-js decodes
  // `grpc-message` with decodeURI, which leaves the `%3A` of connect-node's
  // encodeURIComponent in place.
  const error = new ConnectError(parsed?.message || (status.details ?? ""), code, metadata);
  for (const any of parsed?.details ?? []) {
    error.details.push({ type: any.typeUrl.slice(any.typeUrl.lastIndexOf("/") + 1), value: any.value });
  }
  return error;
}
