import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import type {
  CancelOperationRequest,
  ConfirmFlexibleAmountRequest,
  ConfirmPaymentRequest,
  CreateFlexibleLinkRequest,
  CreateOperationRequest,
  FindOperationsRequest,
  GetFlexibleLinkRequest,
  GetOperationRequest,
  GetPaymentPageRequest,
  GetPoolCoverageRequest,
  GetShopPageRequest,
  HandleProviderCallbackRequest,
  ListManualChecksRequest,
  ListOperationsAuditRequest,
  ListRoutesRequest,
  OperationsService,
  PutProviderRequest,
  PutRouteRequest,
  PutShopPageRequest,
  ResolveReviewRequest,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import type { ListOperatorQueueRequest } from "@gw/proto/gateway/operations/v1/operator_queue_pb";
import type { OperationStore } from "./repository/operations.ts";
import type { CreateDeps } from "./steps/create-deps.ts";
import type { ReceiptDeps } from "./steps/review.ts";
import { putProvider, putRoute } from "./usecases/admin-config.ts";
import { listProviders, listRoutes } from "./usecases/admin-reads.ts";
import { listOperationsAudit } from "./usecases/audit-reads.ts";
import { cancelOperation } from "./usecases/cancel.ts";
import { confirmPayment, listManualChecks, resolveReview } from "./usecases/confirm.ts";
import { createOperation } from "./usecases/create.ts";
import { findOperations } from "./usecases/find-operations.ts";
import { confirmFlexibleAmount } from "./usecases/flexible/confirm-amount.ts";
import { getPoolCoverage } from "./usecases/flexible/coverage.ts";
import { createFlexibleLink } from "./usecases/flexible/create-link.ts";
import { type FlexibleDeps, getFlexibleLink } from "./usecases/flexible/link.ts";
import { getOperation } from "./usecases/operation-reads.ts";
import { listOperatorQueue } from "./usecases/operator-queue.ts";
import { getPaymentPage } from "./usecases/page.ts";
import { handleProviderCallback } from "./usecases/provider-callback.ts";
import { getShopPage, putShopPage } from "./usecases/shop-pages.ts";

export interface HandlerDeps extends CreateDeps {
  store: OperationStore;
  prefix: string;
  logger: Logger;
  /** The receipts service: reviews for confirm_payment, operators' decisions, signed links. */
  receipts: ReceiptDeps["receipts"];
  /** Flexible links: the pool's reads and admission, the link lifetime and the `k` key. */
  matching: FlexibleDeps["matching"];
  linkLifetimeMs: number;
  linkSecret: Buffer;
}

/**
 * gateway.operations.v1.OperationsService. Each method hands its request to the module
 * that owns the use case and returns its answer; domain errors become Connect errors in
 * one place, the catalogue (`withErrorCatalogue`, applied in app.ts).
 */
export class OperationsHandlers implements ServiceImpl<typeof OperationsService> {
  readonly #d: HandlerDeps;

  constructor(deps: HandlerDeps) {
    this.#d = deps;
  }

  createOperation(req: CreateOperationRequest, ctx: HandlerContext) {
    return createOperation(this.#d, req, ctx.signal);
  }

  getOperation(req: GetOperationRequest) {
    return getOperation(this.#d, req);
  }

  cancelOperation(req: CancelOperationRequest) {
    return cancelOperation(this.#d.store, req);
  }

  confirmPayment(req: ConfirmPaymentRequest) {
    return confirmPayment(this.#d, req);
  }

  resolveReview(req: ResolveReviewRequest) {
    return resolveReview(this.#d, req);
  }

  listManualChecks(req: ListManualChecksRequest) {
    return listManualChecks(this.#d, req);
  }

  getPoolCoverage(req: GetPoolCoverageRequest) {
    return getPoolCoverage(this.#d, req);
  }

  createFlexibleLink(req: CreateFlexibleLinkRequest, ctx: HandlerContext) {
    return createFlexibleLink(this.#d, req, ctx.signal);
  }

  getFlexibleLink(req: GetFlexibleLinkRequest) {
    return getFlexibleLink(this.#d, req);
  }

  confirmFlexibleAmount(req: ConfirmFlexibleAmountRequest, ctx: HandlerContext) {
    return confirmFlexibleAmount(this.#d, req, ctx.signal);
  }

  getPaymentPage(req: GetPaymentPageRequest) {
    return getPaymentPage(this.#d.store, req);
  }

  handleProviderCallback(req: HandleProviderCallbackRequest) {
    return handleProviderCallback(this.#d, req);
  }

  putProvider(req: PutProviderRequest) {
    return putProvider(this.#d, req);
  }

  listProviders() {
    return listProviders(this.#d.store);
  }

  listRoutes(req: ListRoutesRequest) {
    return listRoutes(this.#d.store, req);
  }

  listOperationsAudit(req: ListOperationsAuditRequest) {
    return listOperationsAudit(this.#d.store, req);
  }

  putRoute(req: PutRouteRequest) {
    return putRoute(this.#d, req);
  }

  putShopPage(req: PutShopPageRequest) {
    return putShopPage(this.#d.store, req);
  }

  getShopPage(req: GetShopPageRequest) {
    return getShopPage(this.#d.store, req.shopId);
  }

  findOperations(req: FindOperationsRequest) {
    return findOperations(this.#d.store, req);
  }

  listOperatorQueue(req: ListOperatorQueueRequest) {
    return listOperatorQueue(this.#d.store, req);
  }
}
