import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import { Decimal, isCurrency, isMethod } from "@gw/money";
import {
  type CancelOperationRequest,
  type ConfirmFlexibleAmountRequest,
  type ConfirmPaymentRequest,
  type CreateFlexibleLinkRequest,
  type GetFlexibleLinkRequest,
  type GetOperationRequest,
  type GetPaymentPageRequest,
  type GetPoolCoverageRequest,
  type HandleProviderCallbackRequest,
  type ListManualChecksRequest,
  type ListRoutesRequest,
  type OperationsService,
  type PutProviderRequest,
  type PutRouteRequest,
  type ReceiptItem,
  ReceiptItemSchema,
  type ResolveReviewRequest,
} from "@gw/proto/gateway/operations/v1/operations_pb";
import { Code, failure } from "@gw/rpc";
import type postgres from "postgres";
import { listProviders, listRoutes } from "./admin-reads.ts";
import {
  confirmPayment,
  listManualChecks,
  type ReceiptDeps,
  receiptEvidence,
  resolveReview,
} from "./confirm.ts";
import { CallbackRejectedError, type Connector, type ProviderResult } from "./connectors/connector.ts";
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
import type { LegRow, OperationStore } from "./store.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const REASON_MAX_BYTES = 2048;
/** Statuses from which a cancel still applies: no money has been taken yet. */
const CANCELLABLE = new Set(["routing", "pending", "awaiting_confirmation"]);

const notFound = () => failure(Code.NotFound, "operation_not_found", "operation not found");

/**
 * The receipt items of a row: completed legs, only once the parent completed. The part of
 * the actual amount no leg accounts for (a provider that reported its completion without
 * legs: the whole of it, or its share of a pool payout handed off to it) is one synthetic
 * contribution with that authoritative amount and no receipt, and the evidence is then
 * `partial`, as the spec defines; rereading does not change it.
 */
export function receiptsOf(row: OperationRow, legs: LegRow[]): { receipts: ReceiptItem[]; status: string } {
  if (!isTerminal(row.status)) return { receipts: [], status: "not_ready" };
  if (row.status !== "completed") return { receipts: [], status: "complete" };
  const receipts = legs.map((l) =>
    create(ReceiptItemSchema, {
      id: l.id,
      amount: new Decimal(l.amount).toFixed(2),
      completedAt: l.completed_at.toISOString(),
    }),
  );
  const decomposed = legs.reduce((sum, l) => sum.plus(l.amount), new Decimal(0));
  const rest = new Decimal(row.actual_amount).minus(decomposed);
  if (rest.lte(0)) return { receipts, status: "complete" };
  receipts.push(
    create(ReceiptItemSchema, {
      id: row.id,
      amount: rest.toFixed(2),
      completedAt: row.updated_at.toISOString(),
    }),
  );
  // Ordered by completed_at, then id, as the legs are.
  receipts.sort((a, b) =>
    a.completedAt === b.completedAt ? (a.id < b.id ? -1 : 1) : a.completedAt < b.completedAt ? -1 : 1,
  );
  return { receipts, status: "partial" };
}

/** What `applyProviderResult` did. */
export type ApplyOutcome = "applied" | "already_terminal" | "not_routed";

/**
 * Applies a provider's result (from its callback or from the reconciler's status
 * question) to the operation, inside `tx`: locks the row, stores the legs, and moves it
 * to `completed` (actual amount = sum of the legs) or `rejected` with its event. The row
 * lock makes a callback and the reconciler arriving together apply once: the second
 * finds the row terminal and changes nothing. A result for an operation routed to
 * another provider, or for a terminal one, changes nothing either.
 */
export async function applyProviderResult(
  deps: { store: OperationStore; logger: Logger },
  tx: postgres.TransactionSql,
  providerName: string,
  result: ProviderResult,
  source: "callback" | "reconciler",
): Promise<ApplyOutcome> {
  const row = await deps.store.lock(result.operationId, tx);
  if (!row || row.provider !== providerName) {
    deps.logger.warn(
      { provider: providerName, operationId: result.operationId, source },
      "provider result for an operation not routed to this provider",
    );
    return "not_routed";
  }
  if (isTerminal(row.status)) {
    if (row.status === result.status) {
      deps.logger.info({ operationId: row.id, status: row.status, source }, "provider result applied before");
    } else if (result.status === "completed") {
      // Terminal states never change; money the provider took for an operation we expired
      // or cancelled needs an operator.
      deps.logger.error(
        { operationId: row.id, status: row.status, result: result.status, provider: providerName, source },
        "provider completed an operation that is already terminal: money may have moved",
      );
    } else {
      deps.logger.warn(
        { operationId: row.id, status: row.status, result: result.status, source },
        "provider result for a terminal operation ignored",
      );
    }
    return "already_terminal";
  }
  // A pool payout handed off to this provider already holds what the pool paid into it
  // (legs): the provider's rejection ends it as a self-matching partial, as a hand-off
  // nobody took does, never `rejected` (that would return the whole reserve to the shop).
  const paid = result.status === "rejected" && row.type === "payout" ? await deps.store.legs(row.id, tx) : [];
  if (result.status === "rejected" && paid.length === 0) {
    const next = await deps.store.transition(row, { status: "rejected" }, { emit: true, tx });
    if (!next) throw failure(Code.Aborted, "dependency_unavailable", "operation changed concurrently; retry");
    return "applied";
  }
  // A rejection reports no legs of its own: only what the pool paid counts.
  const reported = result.status === "rejected" ? [] : result.legs;
  let total = paid.reduce((sum, l) => sum.plus(l.amount), new Decimal(0));
  for (const leg of reported) {
    const amount = new Decimal(leg.amount);
    if (!amount.isFinite() || amount.lte(0))
      throw failure(Code.InvalidArgument, "validation_failed", "leg amount");
    total = total.plus(amount);
    await tx`
      insert into operations.legs (id, operation_id, provider, provider_leg_id, amount, completed_at)
      values (${randomUUID()}, ${row.id}, ${providerName}, ${leg.id}, ${amount.toFixed(2)}, ${leg.completedAt.toISOString()})
      on conflict (operation_id, provider_leg_id) do nothing`;
  }
  if (result.status === "completed" && reported.length === 0) total = new Decimal(row.expected_amount ?? "0");
  const legs = await deps.store.legs(row.id, tx);
  // A pool payout handed off to this provider already holds the pool's contributions as
  // legs: the actual amount is every leg, not only this provider's.
  if (reported.length > 0) total = legs.reduce((sum, l) => sum.plus(l.amount), new Decimal(0));
  const completed = { ...row, status: "completed" as const, actual_amount: total.toFixed(2) };
  const { receipts } = receiptsOf(completed, legs);
  const next = await deps.store.transition(
    row,
    { status: "completed", actual_amount: total.toFixed(2) },
    { emit: true, receipts, tx },
  );
  if (!next) throw failure(Code.Aborted, "dependency_unavailable", "operation changed concurrently; retry");
  return "applied";
}

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
