/**
 * What the API reference says about each operation beyond its route definition: the
 * operationId (every operation), a summary and description where the route has none, and
 * hand-written examples for the merchant API's main calls. Keyed by `METHOD path` as the
 * document spells it; reference.unit.test.ts fails for an operation of the document that has
 * no entry here, so a new route cannot reach /docs undescribed. Kept apart from the route
 * definitions so that the routes' own schemas change without touching this file.
 */

export interface OperationDoc {
  operationId: string;
  summary?: string;
  description?: string;
  /** Replaces the generated example of the JSON (or multipart) request body. */
  request?: unknown;
  /** Replaces the generated example of the 200 answer. */
  response?: unknown;
}

const OPERATION_ID = "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e";
const payment = {
  operation_id: OPERATION_ID,
  merchant_operation_id: "order-1001",
  type: "payment",
  status: "pending",
  method: "WT_RUB_C2C",
  expected_amount: "1000.00",
  currency: "RUB",
  number: "4111111111111111",
  name: "Ivan Petrov",
  bankname: "Sandbox Bank",
  expires_at: "2026-01-15T10:45:00.000Z",
  created_at: "2026-01-15T10:30:00.000Z",
  updated_at: "2026-01-15T10:30:00.000Z",
};
const createBody = {
  merchant_operation_id: "order-1001",
  client_id: "user-42",
  client_ip: "203.0.113.7",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
};
const completed = {
  ...payment,
  status: "completed",
  actual_amount: "1000.00",
  commission_amount: "25.00",
  settlement_amount: "975.00",
  settlement_currency: "RUB",
  updated_at: "2026-01-15T10:36:12.000Z",
  receipts: [],
  receipt_evidence_status: "not_ready",
};

export const OPERATION_DOCS: Record<string, OperationDoc> = {
  // The merchant API.
  "POST /v1/payment": { operationId: "createPayment", request: createBody, response: payment },
  "POST /v1/payout": {
    operationId: "createPayout",
    request: {
      ...createBody,
      merchant_operation_id: "payout-2001",
      method: "WT_RUB_PHONE",
      amount: "500.00",
      number: "79001234567",
      name: "Ivan Petrov",
      bankname: "Sandbox Bank",
    },
    response: {
      ...payment,
      merchant_operation_id: "payout-2001",
      type: "payout",
      method: "WT_RUB_PHONE",
      expected_amount: "500.00",
      number: "79001234567",
      commission_amount: "10.00",
    },
  },
  "POST /v1/payment/link": {
    operationId: "createPaymentLink",
    description:
      "As `POST /v1/payment`, for a shop with the hosted page enabled: the answer adds `payment_url`, a page " +
      "the payer opens to see the card number, the amount and the time left.",
    request: createBody,
    response: { ...payment, payment_url: `http://127.0.0.1:8081/pay/${OPERATION_ID}` },
  },
  "POST /v1/payment/link/flexible": { operationId: "createFlexiblePaymentLink" },
  "POST /v1/get_operation_state": {
    operationId: "getOperationState",
    description:
      "By `operation_id` or by `merchant_operation_id` (exactly one). The operation as the webhooks carry it, " +
      "with its receipts and `receipt_evidence_status`. Another shop's operation answers 404.",
    request: { merchant_operation_id: "order-1001" },
    response: completed,
  },
  "POST /v1/cancel_operation": {
    operationId: "cancelOperation",
    description:
      "Cancels a payment that no provider has completed yet (by `operation_id` or `merchant_operation_id`). " +
      "`outcome` says whether this call cancelled it or it was already terminal; a payout cannot be cancelled (412).",
    request: { operation_id: OPERATION_ID, reason: "order abandoned" },
    response: { outcome: "cancelled", operation: { ...payment, status: "cancelled" } },
  },
  "GET /v1/balances": {
    operationId: "getBalances",
    description: "One row per currency the shop can hold, with what is available and what payouts reserve.",
  },
  "GET /v1/payment/availability": { operationId: "getPaymentAvailability" },
  "POST /v1/payment/recommendations": { operationId: "getPaymentRecommendations" },
  "POST /v1/confirm_payment": {
    operationId: "confirmPayment",
    request: { operation_id: OPERATION_ID, confirmation_type: "receipt", receipt: "(the PDF's bytes)" },
    response: { ...payment, status: "completed", actual_amount: "1000.00" },
  },
  "GET /receipts/{receipt_id}": { operationId: "downloadReceipt" },

  // Provider callbacks and probes.
  "POST /callbacks/providers/{name}": { operationId: "providerCallback", request: { status: "completed" } },
  "GET /livez": { operationId: "livez", summary: "Liveness: the process runs" },
  "GET /healthz": { operationId: "healthz", summary: "Health: Postgres and NATS answer" },
  "GET /readyz": { operationId: "readyz", summary: "Readiness: every dependency answers" },

  // The admin API: accounts.
  "POST /admin/v1/merchants": {
    operationId: "adminCreateMerchant",
    summary: "Create a merchant",
    description: "A merchant owns shops; the answer carries its id.",
  },
  "POST /admin/v1/shops": {
    operationId: "adminCreateShop",
    summary: "Create a shop",
    description: "A shop of a merchant: the scope of API keys, routes, pricing, balances and webhooks.",
  },
  "POST /admin/v1/shops/{shop_id}/api-keys": {
    operationId: "adminIssueApiKey",
    summary: "Issue an API key",
    description: "The key itself is in this answer only; the gateway keeps its hash.",
  },
  "GET /admin/v1/shops/{shop_id}/api-keys": {
    operationId: "adminListApiKeys",
    summary: "List a shop's API keys",
    description: "Prefixes and dates only, never a key.",
  },
  "POST /admin/v1/api-keys/{key_id}/revoke": {
    operationId: "adminRevokeApiKey",
    summary: "Revoke an API key",
    description: "Every replica of the edge refuses the key from then on (401).",
  },
  "GET /admin/v1/shops/{shop_id}/settings": {
    operationId: "adminGetShopSettings",
    summary: "Read a shop's settings",
    description: "Webhook endpoint, hosted page and flexible link switches.",
  },
  "PUT /admin/v1/shops/{shop_id}/settings": {
    operationId: "adminPutShopSettings",
    summary: "Change a shop's settings",
    description:
      "Setting a webhook endpoint for the first time answers the signing secret (`whsec_...`) once.",
  },
  "POST /admin/v1/shops/{shop_id}/webhook-secret/rotate": {
    operationId: "adminRotateWebhookSecret",
    summary: "Rotate a shop's webhook signing secret",
    description: "The new secret is in this answer only; deliveries are signed with it from then on.",
  },
  "GET /admin/v1/shops/{shop_id}/webhooks/deliveries": {
    operationId: "adminListWebhookDeliveries",
    summary: "A shop's webhook delivery log",
    description: "Every event for the shop, its attempts, last answer and next attempt.",
  },
  "POST /admin/v1/shops/{shop_id}/webhooks/deliveries/{event_id}/redeliver": {
    operationId: "adminRedeliverWebhook",
    summary: "Deliver a webhook again",
    description: "The same event id and body, signed anew; for a failed delivery or one the merchant lost.",
  },
  // The admin API: configuration.
  "PUT /admin/v1/providers/{name}": {
    operationId: "adminPutProvider",
    summary: "Register or change a provider",
    description: "Its kind, base URL, credentials (never shown again) and the methods it serves.",
  },
  "GET /admin/v1/providers": { operationId: "adminListProviders" },
  "PUT /admin/v1/shops/{shop_id}/routes/{method}": {
    operationId: "adminPutRoute",
    summary: "Set a shop's route for a method",
    description:
      "The providers a payin and a payout of the method go to, in order, and the settlement currency.",
  },
  "GET /admin/v1/shops/{shop_id}/routes": { operationId: "adminListRoutes" },
  "PUT /admin/v1/shops/{shop_id}/pricing/{method}": {
    operationId: "adminPutPricing",
    summary: "Set a shop's pricing for a method",
    description: "Commission tiers by amount, per direction: a percentage and a fixed part.",
  },
  "GET /admin/v1/shops/{shop_id}/pricing": { operationId: "adminListPricing" },
  "PUT /admin/v1/fx/rates/{from}/{to}": {
    operationId: "adminPutFxRate",
    summary: "Set an exchange rate",
    description: "The rate operations in `from` are quoted at when they settle in `to`.",
  },
  "POST /admin/v1/shops/{shop_id}/ledger/adjustments": {
    operationId: "adminCreateAdjustment",
    summary: "Adjust a shop's balance",
    description: "A manual ledger entry with its reason; idempotent on `adjustment_id` when given.",
  },
  "GET /admin/v1/shops/{shop_id}/balances": {
    operationId: "adminGetShopBalances",
    summary: "A shop's balances",
    description: "As the merchant's `GET /v1/balances` shows them.",
  },
  // The admin API: receipt review, dead letters, provider facts, audit.
  "GET /admin/v1/manual-checks": { operationId: "adminListManualChecks" },
  "POST /admin/v1/operations/{operation_id}/review": { operationId: "adminReviewPayment" },
  "GET /admin/v1/manual-checks/{operation_id}/receipt": { operationId: "adminGetReviewedReceipt" },
  "GET /admin/v1/dead-letters": { operationId: "adminListDeadLetters" },
  "POST /admin/v1/dead-letters/{service}/{consumer}/{event_id}/retry": {
    operationId: "adminRetryDeadLetter",
  },
  "POST /admin/v1/dead-letters/{service}/{consumer}/{event_id}/discard": {
    operationId: "adminDiscardDeadLetter",
  },
  "GET /admin/v1/provider-facts": { operationId: "adminListProviderFacts" },
  "GET /admin/v1/payouts/operator-queue": { operationId: "adminListOperatorQueue" },
  "GET /admin/v1/operations/search": { operationId: "adminSearchOperations" },
  "GET /admin/v1/merchants": { operationId: "adminListMerchants" },
  "GET /admin/v1/shops/{shop_id}": { operationId: "adminGetShop" },
  "POST /admin/v1/provider-facts/{id}/resolve": { operationId: "adminResolveProviderFact" },
  "GET /admin/v1/audit/operations": { operationId: "adminAuditOperations" },
  "GET /admin/v1/audit/ledger/operations": { operationId: "adminAuditLedgerOperations" },
  "GET /admin/v1/audit/ledger/shops": { operationId: "adminAuditLedgerShops" },
  "GET /admin/v1/audit/events": { operationId: "adminAuditEvents" },
  "GET /admin/v1/audit/webhook-deliveries": { operationId: "adminAuditWebhookDeliveries" },
};
