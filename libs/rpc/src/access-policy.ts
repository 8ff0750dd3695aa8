/**
 * Which service may call which RPC: for every gRPC service (full name) and method, the
 * callers allowed. `"*"` stands for every method of the service not listed by name.
 * Anything not listed is refused (PERMISSION_DENIED): a new RPC, or a new caller of an
 * old one, needs a line here. Health checks are open to anyone and are not listed.
 */
export type AccessPolicy = Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;

/** The gateway's callers (the `SERVICE_NAME` each process signs its tokens with). */
export const SERVICE_NAMES = [
  "edge",
  "checkout",
  "operations",
  "matching",
  "ledger",
  "receipts",
  "webhooks",
  "sandbox-provider",
] as const;

const MERCHANT = ["edge", "checkout"] as const;
const ADMIN = ["edge"] as const;

/**
 * The gateway's policy. Merchant RPCs of operations come from the edge and the hosted
 * page; admin RPCs (configuration, reviews, adjustments, endpoints) only from the edge;
 * service-to-service RPCs only from the service whose flow needs them.
 */
export const GATEWAY_ACCESS_POLICY: AccessPolicy = {
  "gateway.operations.v1.OperationsService": {
    CreateOperation: MERCHANT,
    GetOperation: MERCHANT,
    CancelOperation: MERCHANT,
    ConfirmPayment: MERCHANT,
    HandleProviderCallback: ["edge"],
    PutProvider: ADMIN,
    PutRoute: ADMIN,
    ListProviders: ADMIN,
    ListRoutes: ADMIN,
    ResolveReview: ADMIN,
    ListManualChecks: ADMIN,
    ListOperationsAudit: ADMIN,
    "*": MERCHANT,
  },
  "gateway.operations.v1.ProviderFactsService": {
    "*": ADMIN,
  },
  "gateway.ledger.v1.LedgerService": {
    Quote: ["operations"],
    GetPricingTerms: ["operations"],
    ReservePayout: ["operations"],
    ReleaseRefusedPayout: ["operations"],
    GetBalances: ["edge", "operations"],
    PutPricing: ADMIN,
    ListPricing: ADMIN,
    PutFxRate: ADMIN,
    PostAdjustment: ADMIN,
    ListClearingByOperation: ADMIN,
    ListShopTotals: ADMIN,
  },
  "gateway.matching.v1.MatchingService": {
    GetPoolDepth: ["operations", "edge"],
    Availability: ["operations", "edge", "checkout"],
    Recommendations: ["operations", "edge", "checkout"],
    "*": ["operations"],
  },
  "gateway.receipts.v1.ReceiptsService": {
    SubmitReceipt: ["operations"],
    GetReview: ["operations", "edge"],
    ResolveManualCheck: ["operations"],
    SignReceiptUrls: ["operations"],
    VerifyReceiptUrl: ["edge", "operations"],
    GetReceiptFile: ["edge", "operations"],
    GetReviewFile: ["edge", "operations"],
    GetStorageStats: ADMIN,
  },
  "gateway.webhooks.v1.WebhooksService": {
    "*": ADMIN,
  },
  // Served by every service with event consumers (operations, ledger, webhooks).
  "gateway.deadletters.v1.DeadLetterService": {
    "*": ADMIN,
  },
  // Served by every service with an outbox or consumers (operations, ledger, matching, webhooks).
  "gateway.events.v1.EventHealthService": {
    "*": ADMIN,
  },
};

/** Whether `caller` may call `method` of `service` under `policy`. */
export function isAllowed(policy: AccessPolicy, service: string, method: string, caller: string): boolean {
  const rules = policy[service];
  if (rules === undefined) return false;
  const callers = Object.hasOwn(rules, method) ? rules[method] : rules["*"];
  return callers?.includes(caller) ?? false;
}
