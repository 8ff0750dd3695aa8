import { Code, type ConnectError, failure } from "@gw/rpc";

/**
 * The webhooks service's error catalogue: every error it answers with, named once with its
 * Connect code (the edge maps it to the HTTP status), its public code and its message. The
 * rest of the service raises these; no other file calls `failure(`
 * (tooling/scripts/check-inline-failures.ts).
 */

/** INVALID_ARGUMENT `validation_failed`: a request field is missing or malformed. */
export const invalid = (field: string, message: string): ConnectError =>
  failure(Code.InvalidArgument, "validation_failed", message, field);

/** NOT_FOUND `not_found`: the shop has no endpoint to rotate the secret of. */
export const endpointNotFound = (): ConnectError =>
  failure(Code.NotFound, "not_found", "no webhook endpoint configured for this shop");

/** NOT_FOUND `not_found`: no delivery with that event id in the shop. */
export const deliveryNotFound = (): ConnectError => failure(Code.NotFound, "not_found", "delivery not found");
