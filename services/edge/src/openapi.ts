import {
  type ErrorAudience,
  type ErrorStatus,
  errorCodesFor,
  PUBLIC_ERRORS,
  type PublicErrorCode,
  statusesOf,
} from "@gw/api";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import type { EdgeEnv } from "./env.ts";
import { describePoolRoutes } from "./routes/pool-openapi.ts";
import {
  BalancesSchema,
  CancelResultSchema,
  errorResponses,
  jsonRequest,
  jsonResponse,
  LinkOperationSchema,
  OperationSchema,
  OperationStateSchema,
} from "./schemas.ts";
import { cancelOperationBody, createOperationBody, operationRefBody } from "./validation.ts";

/**
 * Describes the routes that are not OpenAPIHono routes (the `/v1` merchant API, provider
 * callbacks, probes) in the app's OpenAPI registry. The `/v1` handlers validate with the
 * same zod schemas by hand, because the spec fixes the order of checks (key, then body)
 * and the exactly-one-identifier rules, which a generated validator cannot express.
 */
export function describeUnmanagedRoutes(app: OpenAPIHono<EdgeEnv>): void {
  const registry = app.openAPIRegistry;
  registry.registerComponent("securitySchemes", "ApiKey", {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
  });
  registry.registerComponent("securitySchemes", "AdminBearer", { type: "http", scheme: "bearer" });

  const security = [{ ApiKey: [] }];
  const tags = ["merchant API"];
  const createErrors = errorResponses(400, 401, 412, 413, 415, 429, 503);

  registry.registerPath({
    method: "post",
    path: "/v1/payment",
    tags,
    security,
    summary: "Create a payment",
    description:
      "Waits up to 15 s for a provider to accept; when none does, answers 503 `no_provider_accepted` " +
      "(no decision: a retry with the same key and body asks the providers again). Idempotent on merchant_operation_id and the body. " +
      "`awaiting_confirmation` instead of `pending` when the route requires a receipt.",
    request: { body: jsonRequest(createOperationBody) },
    responses: { 200: jsonResponse(OperationSchema, "The payment."), ...createErrors },
  });
  registry.registerPath({
    method: "post",
    path: "/v1/payout",
    tags,
    security,
    summary: "Create a payout",
    description:
      "`number` is required; `bankname` is required for WT_RUB_PHONE. The reserve (amount + commission) is on the " +
      "balance when the 200 answers. A provider whose answer is unknown (timeout, 5xx) is asked its status before any " +
      "other provider is asked; still unresolved at the end of the 15 s wait, the payout answers 503 " +
      "`dependency_unavailable` and goes on being resolved: a retry with the same key answers its outcome (or 503 again).",
    request: { body: jsonRequest(createOperationBody) },
    responses: { 200: jsonResponse(OperationSchema, "The payout."), ...createErrors },
  });
  registry.registerPath({
    method: "post",
    path: "/v1/payment/link",
    tags,
    security,
    summary: "Create a payment with a hosted page link",
    request: { body: jsonRequest(createOperationBody) },
    responses: { 200: jsonResponse(LinkOperationSchema, "The payment with payment_url."), ...createErrors },
  });
  registry.registerPath({
    method: "post",
    path: "/v1/get_operation_state",
    tags,
    security,
    summary: "Read an operation of the key's shop",
    request: { body: jsonRequest(operationRefBody) },
    responses: {
      200: jsonResponse(OperationStateSchema, "The operation with receipts."),
      ...errorResponses(400, 401, 404, 503),
    },
  });
  registry.registerPath({
    method: "post",
    path: "/v1/cancel_operation",
    tags,
    security,
    summary: "Cancel a payment",
    request: { body: jsonRequest(cancelOperationBody) },
    responses: {
      200: jsonResponse(CancelResultSchema, "The decision and a snapshot."),
      ...errorResponses(400, 401, 404, 412, 503),
    },
  });
  registry.registerPath({
    method: "get",
    path: "/v1/balances",
    tags,
    security,
    summary: "Balances of the key's shop",
    responses: {
      200: jsonResponse(BalancesSchema, "One row per supported currency."),
      ...errorResponses(401, 500, 503),
    },
  });
  registry.registerPath({
    method: "post",
    path: "/callbacks/providers/{name}",
    tags: ["providers"],
    summary: "A provider's result callback",
    description: "The raw body and headers go to the provider's connector, which checks the signature.",
    request: { params: z.object({ name: z.string().openapi({ param: { name: "name", in: "path" } }) }) },
    responses: {
      200: jsonResponse(z.object({ ok: z.literal(true) }), "Accepted."),
      ...errorResponses(401, 404, 413, 503),
    },
  });
  describePoolRoutes(app);
  for (const [path, description] of [
    ["/livez", "The process runs."],
    ["/healthz", "Postgres and NATS answer."],
    ["/readyz", "Postgres, NATS and every downstream gRPC service answer."],
  ] as const) {
    registry.registerPath({
      method: "get",
      path,
      tags: ["probes"],
      description,
      responses: { 204: { description: "Healthy." }, ...errorResponses(503) },
    });
  }
}

/** A status and a code, one row of an audience's table. */
type ErrorRow = { status: ErrorStatus; code: PublicErrorCode };

/** The rows of `audience`'s codes, by status: a code raised with two statuses has two rows. */
function errorRows(audience: ErrorAudience): ErrorRow[] {
  const rows = errorCodesFor(audience).flatMap((code) =>
    statusesOf(code).map((status) => ({ status, code })),
  );
  // Stable: within a status, the table's order.
  return rows.sort((a, b) => a.status - b.status);
}

/** One markdown table of an audience's codes: status, code, meaning. */
function errorTable(audience: ErrorAudience): string[] {
  return [
    "| Status | Code | Meaning |",
    "| --- | --- | --- |",
    ...errorRows(audience).map(
      ({ status, code }) =>
        `| ${status} | \`${code}\` | ${PUBLIC_ERRORS[code].meaning.replaceAll("|", "\\|")} |`,
    ),
  ];
}

/** "`code` (status)" for each code of `audience` that `keep` keeps, by status, in one line. */
function codeList(audience: ErrorAudience, keep: (code: PublicErrorCode) => boolean): string {
  return errorRows(audience)
    .filter(({ code }) => keep(code))
    .map(({ status, code }) => `\`${code}\` (${status})`)
    .join(", ");
}

/** Whether every route may answer `code`. */
const anyRoute = (code: PublicErrorCode) => PUBLIC_ERRORS[code].audience === "any";

/**
 * The description's "Errors" section, generated from libs/api's `PUBLIC_ERRORS` (the one
 * table of codes, statuses and audiences): the merchant API's codes by status, then the
 * admin API's.
 */
export function errorsSection(): string[] {
  return [
    "## Errors",
    'Every error has one body: `{"error": {"code": "...", "message": "...", "field": "..."}, "request_id": "..."}`',
    "(`field` only when the error is about one request field). Statuses follow the spec's Errors table.",
    "A newer gateway may add codes: a client should act on the status for a code it does not know.",
    "The codes below are also in `info.x-error-codes` (`merchant`, `admin`).",
    "",
    "### Merchant API (`/v1`, receipt links)",
    ...errorTable("merchant"),
    "",
    "### Admin API (`/admin/v1`)",
    ...errorTable("admin"),
    "",
    `Provider callbacks also answer ${codeList("provider", (c) => !anyRoute(c))}; the probes`,
    `${codeList("probe", (c) => !anyRoute(c))}. Any route may answer ${codeList("merchant", anyRoute)}.`,
    "",
  ];
}

/** The OpenAPI 3.1 document's header. */
export const OPENAPI_INFO = {
  openapi: "3.1.0",
  info: {
    title: "Payment gateway",
    version: "1.0.0",
    // The codes of the Errors section as data, for clients and the SDK's check of its list.
    "x-error-codes": { merchant: errorCodesFor("merchant"), admin: errorCodesFor("admin") },
    description: [
      "The merchant API (`/v1`, `X-API-Key`), the admin API (`/admin/v1`, bearer token) and probes.",
      "",
      ...errorsSection(),
      "## Limits",
      "Every route has a body limit, checked before the credentials and while the body is read (a declared",
      "`Content-Length` and the bytes received, chunked too): `413 payload_too_large` past it (`receipt_too_large`",
      "on `/v1/confirm_payment`). `/v1/*` and `/admin/*` JSON bodies: 64 KiB; `/v1/confirm_payment`: the receipt",
      "limit (`RECEIPT_STORE_MAX_BYTES`, 20 MiB) + 64 KiB; provider callbacks: 64 KiB; the back-office login form:",
      "4 KiB, its other forms 64 KiB; any other route 16 KiB. Identifier fields (`merchant_operation_id`, `client_id`:",
      "at most 255 characters; `number`, `bankname`: 64) hold no control characters (U+0000 to U+001F, U+007F); text",
      "fields (`name`: 255 characters, `reason`: 2048 bytes) no NUL; all are well-formed Unicode. Past a rule:",
      "`400 validation_failed` naming the field. An API key may have 16 `/v1` requests in progress on a replica",
      "(`MAX_IN_FLIGHT_PER_KEY`); one more is answered `429 rate_limited` with `Retry-After`, so that one shop's",
      "burst leaves the other shops served. A replica's whole budget full answers `503 overloaded`.",
      "",
      "## Refusals are not outages",
      "A create the shop's configuration can never price is refused with a 412 and its own code, with nothing",
      "created, reserved or sent to any provider: `pricing_not_configured` (`field: amount`: no pricing tier of",
      "the shop covers the amount, e.g. 0.01 or 999999999.99 when the tiers span 1.00 to 1,000,000.00, or no",
      "pricing at all), `fx_rate_missing` (`field: settlement_currency`: no rate to the route's settlement",
      "currency), `route_not_configured` (no route for the method and direction). Repeating it answers the same",
      "until an operator changes the configuration; it carries no `Retry-After`. A 503 only ever means no",
      "decision (a dependency could not be reached, or no provider answered definitely): retry the same request.",
      "",
      "## Idempotency",
      "`merchant_operation_id` is the key of a create, per shop. The same key with the same body returns the",
      "original operation; with another body, `412 idempotency_conflict`. A create that no provider accepted",
      "within the 15 s wait answers `503 no_provider_accepted`: no decision, so a retry with the same key and",
      "body asks the providers again under the same operation id and answers its own outcome. A payout whose",
      "provider's answer is still unknown at the end of the wait answers `503 dependency_unavailable`; the gateway",
      "keeps asking that provider, never another one first, and a retry answers the outcome (or 503 again).",
      "A key held by a flexible link answers an ordinary create `412 idempotency_conflict`. No synthetic",
      "`pending` is ever returned.",
      "",
      "## Webhooks",
      "Events: `payment.awaiting_confirmation` (at once on entry), `payment.completed`, `payment.rejected`,",
      "`payment.cancelled`, `payment.manual_check`, `payout.completed`, `payout.rejected`. Body:",
      '`{"id", "type", "created_at", "data"}` where `data` is the operation as `get_operation_state` shows it',
      "(with `actual_amount`, `receipts`, `receipt_evidence_status`). Signed per Standard Webhooks",
      "(`webhook-id` = `id`, stable across retries; `webhook-timestamp`; `webhook-signature`). At least once;",
      "retried with backoff for about 31.7 hours; a 2xx answer acknowledges. Delivery log and redelivery:",
      "`/admin/v1/shops/{shop_id}/webhooks/deliveries`.",
    ].join("\n"),
  },
} as const;
