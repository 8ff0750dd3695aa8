import { create } from "@bufbuild/protobuf";
import { Decimal } from "@gw/money";
import { ScopeSchema } from "@gw/proto/gateway/common/v1/common_pb";
import {
  type GetPaymentPageRequest,
  type GetPaymentPageResponse,
  type PaymentPage,
  PaymentPageSchema,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import { bankDetails } from "../domain/banks.ts";
import { OperationNotFoundError, ValidationError } from "../domain/lifecycle/errors.ts";
import { credentialMatches } from "../domain/link-credential.ts";
import type { OperationRow } from "../domain/model.ts";
import type { OperationStore } from "../repository/operations.ts";

/**
 * The payer's hosted page (checkout) reads a payment through `GetPaymentPage`. The page
 * is reached by the operation id alone, so the answer must confirm nothing about any
 * operation that was not handed to a payer as a hosted link: everything else is the same
 * NOT_FOUND as an unknown id, and the answer carries only what the payer is shown.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The outcomes the spec names for the page, plus the two waiting states before them. */
export type PageOutcome =
  | "awaiting_payment"
  | "awaiting_receipt"
  | "paid"
  | "under_review"
  | "declined"
  | "expired";

/**
 * What the payer is told about a payment in `row.status`. A rejection at or after
 * `expires_at` is the reconciler expiring it (the payable window closed without a
 * result), which the payer reads as "expired", not as a refusal.
 */
export function pageOutcome(row: Pick<OperationRow, "status" | "expires_at" | "updated_at">): PageOutcome {
  switch (row.status) {
    case "pending":
      return "awaiting_payment";
    case "awaiting_confirmation":
      return "awaiting_receipt";
    case "manual_check":
      return "under_review";
    case "completed":
      return "paid";
    case "rejected":
      return row.expires_at && row.updated_at.getTime() >= row.expires_at.getTime() ? "expired" : "declined";
    default:
      return "declined";
  }
}

/** The page-safe view of a row: amount, method, requisites, expiry and the outcome. */
export function toPaymentPage(row: OperationRow): PaymentPage {
  const currency = row.currency ?? "";
  const page = create(PaymentPageSchema, {
    operationId: row.id,
    amount: new Decimal(row.expected_amount ?? "0").toFixed(2),
    currency,
    method: row.method ?? "",
    outcome: pageOutcome(row),
    receiptRequired: row.receipt_required,
  });
  if (row.number !== null) {
    page.number = row.number;
    page.name = row.name ?? undefined;
    if (row.bankname) {
      page.bankname = row.bankname;
      page.banknameDetails = bankDetails(currency, row.bankname);
    }
  }
  if (row.expires_at) page.expiresAt = row.expires_at.toISOString();
  if (row.status === "completed") page.paidAmount = new Decimal(row.actual_amount).toFixed(2);
  return page;
}

/**
 * `GetPaymentPage`: `OperationNotFoundError` for anything but a payment created through a
 * hosted link (or a flexible link whose `k` holds); `ValidationError` for a malformed id.
 */
export async function getPaymentPage(
  store: OperationStore,
  req: GetPaymentPageRequest,
): Promise<GetPaymentPageResponse> {
  if (!UUID.test(req.operationId)) throw new ValidationError("operation_id must be a UUID", "operation_id");
  const row = await store.findAnyById(req.operationId);
  const shown = row?.hosted_page || (req.k !== undefined && (await flexibleCredentialHolds(store, req)));
  if (!row || !shown || row.type !== "payment" || row.status === "routing" || row.request_hash === null)
    throw new OperationNotFoundError();
  const page = toPaymentPage(row);
  const shop = await store.shopPages.get(row.shop_id);
  if (shop?.display_name) page.shopDisplayName = shop.display_name;
  if (shop?.return_url) page.returnUrl = shop.return_url;
  return {
    $typeName: "gateway.operations.v1.GetPaymentPageResponse",
    page,
    scope: create(ScopeSchema, { merchantId: row.merchant_id, shopId: row.shop_id }),
  };
}

/**
 * Whether `k` is the credential of the flexible link the payment was created through.
 * The hash is compared even when there is no link, so timing tells no ids apart.
 */
async function flexibleCredentialHolds(store: OperationStore, req: GetPaymentPageRequest): Promise<boolean> {
  const link = await store.flexibleLinkOf(req.operationId);
  const ok = credentialMatches(req.k ?? "", link?.k_hash ?? "00".repeat(32));
  return ok && !!req.k && link !== undefined && link.status !== "amount_selection";
}
