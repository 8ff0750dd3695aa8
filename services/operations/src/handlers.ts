import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import { isCurrency, isMethod } from "@gw/money";
import type {
  CancelOperationRequest,
  ConfirmFlexibleAmountRequest,
  ConfirmPaymentRequest,
  CreateFlexibleLinkRequest,
  GetFlexibleLinkRequest,
  GetOperationRequest,
  GetPaymentPageRequest,
  GetPoolCoverageRequest,
  HandleProviderCallbackRequest,
  ListManualChecksRequest,
  ListRoutesRequest,
  OperationsService,
  PutProviderRequest,
  PutRouteRequest,
  ResolveReviewRequest,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import { Code, failure } from "@gw/rpc";
import { listProviders, listRoutes } from "./admin-reads.ts";
import {
  confirmPayment,
  listManualChecks,
  type ReceiptDeps,
  receiptEvidence,
  resolveReview,
} from "./confirm.ts";
import { CallbackRejectedError, type Connector } from "./connectors/connector.ts";
import { type CreateDeps, createOperation, isRefusedCreate, operationIdFor, parseCreate } from "./create.ts";
import {
  confirmFlexibleAmount,
  createFlexibleLink,
  type FlexibleDeps,
  getFlexibleLink,
  getPoolCoverage,
} from "./flexible.ts";
import { isTerminal, type OperationRow, toOperation } from "./model.ts";
import { getPaymentPage, markHostedPage } from "./page.ts";
import { applyProviderResult } from "./provider-results.ts";
import type { OperationStore } from "./store.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const REASON_MAX_BYTES = 2048;
/** Statuses from which a cancel still applies: no money has been taken yet. */
const CANCELLABLE = new Set(["routing", "pending", "awaiting_confirmation"]);

const notFound = () => failure(Code.NotFound, "operation_not_found", "operation not found");

export interface HandlerDeps extends CreateDeps {
  prefix: string;
  logger: Logger;
  /** The receipts service: reviews for confirm_payment, operators' decisions, signed links. */
  receipts: ReceiptDeps["receipts"];
  /** Flexible links: the pool's reads and admission, the link lifetime and the `k` key. */
  matching: FlexibleDeps["matching"];
  linkLifetimeMs: number;
  linkSecret: Buffer;
}

/** gateway.operations.v1.OperationsService. */
export class OperationsHandlers implements ServiceImpl<typeof OperationsService> {
  readonly #d: HandlerDeps;

  constructor(deps: HandlerDeps) {
    this.#d = deps;
  }

  get #store(): OperationStore {
    return this.#d.store;
  }

  async createOperation(req: Parameters<typeof parseCreate>[0], ctx: HandlerContext) {
    const input = parseCreate(req);
    const { row, replayed } = await createOperation(this.#d, input, ctx.signal);
    if (req.hostedPage && row.type === "payment" && !row.hosted_page)
      await markHostedPage(this.#store, row.id);
    return { operation: toOperation(row), replayed };
  }

  async getOperation(req: GetOperationRequest) {
    const row = await this.#find(req.scope?.shopId ?? "", req.id);
    if (!row || row.status === "routing" || row.request_hash === null) throw notFound();
    // A create no provider accepted created no operation (the spec: it "rejects", no
    // webhook), and its retry may still route it: until then there is nothing to read.
    if (await isRefusedCreate(this.#store, row)) throw notFound();
    const lookup = req.id.case === "operationId" ? "operationId" : "merchantOperationId";
    const { receipts, status } = await receiptEvidence(this.#d, row, await this.#store.legs(row.id), lookup);
    return { operation: toOperation(row), receipts, receiptEvidenceStatus: status };
  }

  async cancelOperation(req: CancelOperationRequest) {
    const shopId = req.scope?.shopId ?? "";
    if (Buffer.byteLength(req.reason, "utf8") > REASON_MAX_BYTES)
      throw failure(Code.InvalidArgument, "validation_failed", "reason must be at most 2048 bytes", "reason");
    const reason = req.reason || "cancel";
    for (let attempt = 0; attempt < 10; attempt++) {
      let row = await this.#find(shopId, req.id);
      if (!row) {
        if (req.id.case !== "merchantOperationId") throw notFound();
        // The create has not arrived (or is just arriving): record the decision as a
        // placeholder row; the unique key makes it and the create exclude each other.
        row = await this.#store.insert({
          id: operationIdFor(shopId, req.id.value),
          shop_id: shopId,
          merchant_id: "00000000-0000-0000-0000-000000000000",
          merchant_operation_id: req.id.value,
          request_hash: null,
          type: "payment",
          status: "cancelled",
          cancel_requested: true,
          cancelled_by_command: true,
          cancel_reason: reason,
        });
        if (row) return { outcome: "cancelled", operation: toOperation(row) };
        continue;
      }
      if (row.type !== "payment")
        throw failure(Code.FailedPrecondition, "not_cancellable", "payouts cannot be cancelled");
      if (row.status === "cancelled" && row.cancelled_by_command)
        return { outcome: "cancelled", operation: toOperation(row) };
      if (await isRefusedCreate(this.#store, row)) {
        // A create no provider accepted is no decision: its retry would route again. The
        // cancel decides it, with its event: the retry then answers the cancelled payment.
        const next = await this.#store.transition(
          row,
          { status: "cancelled", cancel_requested: true, cancelled_by_command: true, cancel_reason: reason },
          { emit: true },
        );
        if (next) return { outcome: "cancelled", operation: toOperation(next) };
        continue;
      }
      if (isTerminal(row.status)) return { outcome: "already_terminal", operation: toOperation(row) };
      if (!CANCELLABLE.has(row.status))
        throw failure(
          Code.FailedPrecondition,
          "not_cancellable",
          `a payment in ${row.status} cannot be cancelled`,
        );
      const next =
        row.status === "routing"
          ? await this.#store.transition(
              row,
              { cancel_requested: true, cancel_reason: reason },
              { emit: false },
            )
          : await this.#store.transition(
              row,
              { status: "cancelled", cancelled_by_command: true, cancel_reason: reason },
              { emit: true },
            );
      if (next) {
        // During routing the create will record `cancelled` itself; the decision is durable now.
        const shown =
          row.status === "routing" ? { ...next, status: "cancelled" as const, number: null } : next;
        return { outcome: "cancelled", operation: toOperation(shown) };
      }
    }
    throw failure(Code.Unavailable, "dependency_unavailable", "cancel not accepted; retry");
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
    return getPaymentPage(this.#store, req);
  }

  async handleProviderCallback(req: HandleProviderCallbackRequest) {
    const provider = await this.#store.provider(req.provider);
    const connector = provider && this.#d.connectorFor(provider.kind);
    if (!provider || !connector) throw failure(Code.NotFound, "provider_not_found", "unknown provider");
    let result: ReturnType<Connector["parseCallback"]>;
    try {
      result = connector.parseCallback(provider, req.body, req.headers, new Date());
    } catch (err) {
      if (err instanceof CallbackRejectedError)
        throw failure(Code.Unauthenticated, "bad_signature", "callback signature rejected");
      throw failure(Code.InvalidArgument, "validation_failed", "malformed callback");
    }
    await this.#store.sql.begin(async (tx) => {
      const seen = await tx`
        insert into operations.callbacks (provider, callback_id, operation_id)
        values (${provider.name}, ${result.callbackId}, ${result.operationId})
        on conflict do nothing returning 1`;
      if (seen.length === 0) return; // a replay: applied before
      const outcome = await applyProviderResult(this.#d, tx, provider.name, result, "callback");
      if (
        outcome === "not_routed" &&
        (await this.#store.findAnyById(result.operationId, tx))?.status === "routing"
      ) {
        // The provider answered our create and called back before the create recorded
        // it. Refuse for now, so the callback id is not recorded and the provider's retry
        // applies the result once routing is written.
        throw failure(
          Code.Unavailable,
          "dependency_unavailable",
          "the operation is still being routed; retry",
        );
      }
    });
    return {};
  }

  async putProvider(req: PutProviderRequest) {
    if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(req.name) || req.name === "self_matching")
      throw failure(
        Code.InvalidArgument,
        "validation_failed",
        "provider name must be [a-z0-9_-], not self_matching",
        "name",
      );
    if (!req.kind || !this.#d.connectorFor(req.kind))
      throw failure(Code.InvalidArgument, "validation_failed", "unknown connector kind", "kind");
    if (!URL.canParse(req.baseUrl))
      throw failure(Code.InvalidArgument, "validation_failed", "base_url must be a URL", "base_url");
    if (!req.credentials)
      throw failure(Code.InvalidArgument, "validation_failed", "credentials are required", "credentials");
    const bad = req.methods.find((m) => !isMethod(m));
    if (bad !== undefined || req.methods.length === 0)
      throw failure(Code.InvalidArgument, "validation_failed", "methods must be known methods", "methods");
    await this.#store.putProvider({
      name: req.name,
      kind: req.kind,
      baseUrl: req.baseUrl.replace(/\/+$/, ""),
      credentials: req.credentials,
      methods: req.methods,
    });
    return {};
  }

  listProviders() {
    return listProviders(this.#store.sql);
  }

  listRoutes(req: ListRoutesRequest) {
    return listRoutes(this.#store.sql, req);
  }

  async putRoute(req: PutRouteRequest) {
    if (!UUID.test(req.shopId))
      throw failure(Code.InvalidArgument, "validation_failed", "shop_id must be a UUID", "shop_id");
    if (!isMethod(req.method))
      throw failure(Code.InvalidArgument, "validation_failed", "unknown method", "method");
    if (!isCurrency(req.settlementCurrency))
      throw failure(
        Code.InvalidArgument,
        "validation_failed",
        "unknown settlement currency",
        "settlement_currency",
      );
    for (const [field, list] of [
      ["payin", req.payin],
      ["payout", req.payout],
    ] as const) {
      if (new Set(list).size !== list.length || list.some((n) => !/^[a-z0-9][a-z0-9_-]{0,63}$/.test(n)))
        throw failure(
          Code.InvalidArgument,
          "validation_failed",
          `${field} must be distinct provider names`,
          field,
        );
    }
    await this.#store.putRoute(req.shopId, req.method, {
      payin: req.payin,
      payout: req.payout,
      settlementCurrency: req.settlementCurrency,
    });
    return {};
  }

  async #find(shopId: string, id: GetOperationRequest["id"]): Promise<OperationRow | undefined> {
    if (id.case === "operationId") {
      if (!UUID.test(id.value))
        throw failure(
          Code.InvalidArgument,
          "validation_failed",
          "operation_id must be a UUID",
          "operation_id",
        );
      return this.#store.findById(shopId, id.value);
    }
    if (id.case === "merchantOperationId" && id.value) return this.#store.findByMop(shopId, id.value);
    throw failure(
      Code.InvalidArgument,
      "validation_failed",
      "exactly one of operation_id and merchant_operation_id is required",
    );
  }
}
