import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import type {
  CancelOperationRequest,
  ConfirmFlexibleAmountRequest,
  ConfirmPaymentRequest,
  CreateFlexibleLinkRequest,
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
import { putProvider, putRoute } from "./admin-config.ts";
import { listProviders, listRoutes } from "./admin-reads.ts";
import { listOperationsAudit } from "./audit-reads.ts";
import { handleProviderCallback } from "./callbacks.ts";
import { confirmPayment, listManualChecks, type ReceiptDeps, resolveReview } from "./confirm.ts";
import { type CreateDeps, createOperation, parseCreate } from "./create.ts";
import { findOperations } from "./find-operations.ts";
import {
  confirmFlexibleAmount,
  createFlexibleLink,
  type FlexibleDeps,
  getFlexibleLink,
  getPoolCoverage,
} from "./flexible.ts";
import { cancelOperation } from "./lifecycle/cancel.ts";
import { toOperation } from "./model.ts";
import { getOperation } from "./operation-reads.ts";
import { listOperatorQueue } from "./operator-queue.ts";
import { getPaymentPage, markHostedPage } from "./page.ts";
import type { OperationStore } from "./repository/operations.ts";
import { getShopPage, putShopPage } from "./shop-pages.ts";

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

  async createOperation(req: Parameters<typeof parseCreate>[0], ctx: HandlerContext) {
    const { row, replayed } = await createOperation(this.#d, parseCreate(req), ctx.signal);
    await markHostedPage(this.#d.store, row, req.hostedPage);
    return { operation: toOperation(row), replayed };
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
