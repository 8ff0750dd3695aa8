import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Database } from "@gw/db";
import type { Logger } from "@gw/log";
import { CURRENCIES, Decimal, isCurrency } from "@gw/money";
import type { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { and, desc, eq, inArray, ne, sql } from "drizzle-orm";
import { type ExpectedSnapshot, receiptResolutions, receiptReviews } from "./db/schema.ts";
import {
  invalid,
  notFound,
  receiptAlreadyReviewed,
  receiptFileUnavailable,
  receiptLinksUnavailable,
  receiptReviewInProgress,
  receiptTooLarge,
  receiptUrlExpired,
} from "./errors.ts";
import type { PdfReader } from "./pdf/parse.ts";
import { decide, type Finding, finding } from "./review/findings.ts";
import { recordedKeys, reuseKeys } from "./review/reuse.ts";
import { type ContentReview, type ReviewInput, reviewContent } from "./review/review.ts";
import { getReviewFile } from "./review-file.ts";
import type { ReceiptUrlSigner } from "./signing.ts";
import { type ReceiptStore, sha256Hex } from "./store/receipt-store.ts";

type ReviewRow = typeof receiptReviews.$inferSelect;
type ResolutionRow = typeof receiptResolutions.$inferSelect;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DECIMAL = /^\d{1,16}(\.\d{1,6})?$/;
const METHODS = new Set(["WT_RUB_C2C", "WT_RUB_PHONE"]);
/** At most this many links per SignReceiptUrls call: an operation has a handful of contributions. */
const MAX_SIGN_BATCH = 200;

export interface ReceiptsDeps {
  db: Database;
  store: ReceiptStore;
  reader: PdfReader;
  /** Undefined when no secret is configured: signing and verification answer UNAVAILABLE. */
  signer: ReceiptUrlSigner | undefined;
  logger: Logger;
  storeMaxBytes: number;
}

/**
 * The receipts service: stores a payer's receipt durably, reviews it in a bounded
 * worker, records the verdict with its evidence, takes operators' decisions on manual
 * checks and serves completed receipts through signed links.
 */
export class ReceiptsHandlers implements ServiceImpl<typeof ReceiptsService> {
  readonly #d: ReceiptsDeps;

  constructor(deps: ReceiptsDeps) {
    this.#d = deps;
  }

  async getStorageStats() {
    return this.#d.store.stats();
  }

  async submitReceipt(req: {
    operationId: string;
    shopId: string;
    file: Uint8Array;
    contentType: string;
    fileName?: string | undefined;
    method: string;
    requisites?:
      | {
          number: string;
          name?: string | undefined;
          bankname?: string | undefined;
          banknameDetails?: string | undefined;
        }
      | undefined;
    expectedAmount: string;
    currency: string;
    createdAt: string;
    expiresAt?: string | undefined;
  }) {
    if (!UUID.test(req.operationId)) throw invalid("operation_id", "operation_id must be a UUID");
    if (!UUID.test(req.shopId)) throw invalid("shop_id", "shop_id must be a UUID");
    if (!METHODS.has(req.method)) throw invalid("method", "method must be WT_RUB_C2C or WT_RUB_PHONE");
    const number = req.requisites?.number?.trim();
    if (!number) throw invalid("requisites.number", "the requisites' number is required");
    if (!isCurrency(req.currency)) throw invalid("currency", "unknown currency");
    if (!DECIMAL.test(req.expectedAmount))
      throw invalid("expected_amount", "expected_amount must be a decimal string");
    const createdAt = parseTime(req.createdAt, "created_at");
    const expiresAt = req.expiresAt ? parseTime(req.expiresAt, "expires_at") : undefined;
    if (req.file.length === 0) throw invalid("receipt", "the file is empty");
    if (req.file.length > this.#d.storeMaxBytes) throw receiptTooLarge(this.#d.storeMaxBytes);

    const sha256 = sha256Hex(req.file);
    // A cheap look first, so a refused upload is not stored; the claim below decides under a lock.
    const early = admit(await this.#latest(this.#d.db, req.operationId), req.shopId, sha256, new Date());
    if (early.kind === "replay") return { review: await this.#toProto(early.row), replayed: true };

    // The file is durable before anything is decided about it.
    const stored = await this.#d.store.put(req.file);
    const expected: ExpectedSnapshot = {
      method: req.method,
      number,
      name: req.requisites?.name,
      bankname: req.requisites?.bankname,
      banknameDetails: req.requisites?.banknameDetails,
      amount: new Decimal(req.expectedAmount).toFixed(CURRENCIES[req.currency].scale),
      currency: req.currency,
      createdAt: createdAt.toISOString(),
      expiresAt: expiresAt?.toISOString(),
    };
    const limits = this.#d.reader.limits;
    const claim = await this.#d.db.transaction(async (tx) => {
      await tx.execute(
        sql`select pg_advisory_xact_lock(hashtextextended(${`receipts:op:${req.operationId}`}, 0))`,
      );
      const now = new Date();
      const latest = await this.#latest(tx, req.operationId);
      const decision = admit(latest, req.shopId, sha256, now);
      if (decision.kind === "replay") return decision;
      if (decision.kind === "stale" && latest)
        await tx.update(receiptReviews).set({ status: "abandoned" }).where(eq(receiptReviews.id, latest.id));
      const [row] = await tx
        .insert(receiptReviews)
        .values({
          id: randomUUID(),
          operationId: req.operationId,
          shopId: req.shopId,
          sha256,
          sizeBytes: BigInt(stored.sizeBytes),
          contentType: sniffContentType(req.file, req.contentType),
          fileName: req.fileName ?? null,
          status: "reviewing",
          currency: req.currency,
          expected,
          // A review still running after this belongs to a process that died: every file
          // waiting ahead of it in the queue and its own read must fit.
          reviewDeadline: new Date(now.getTime() + limits.timeoutMs * 10 + 30_000),
        })
        .returning();
      return { kind: "claimed" as const, row: row as ReviewRow };
    });
    if (claim.kind === "replay") return { review: await this.#toProto(claim.row), replayed: true };

    const input: ReviewInput = {
      method: req.method as ReviewInput["method"],
      number,
      name: expected.name,
      bankname: expected.bankname,
      banknameDetails: expected.banknameDetails,
      amount: new Decimal(expected.amount),
      createdAt,
      expiresAt,
      submittedAt: claim.row.createdAt,
    };
    const content = reviewContent(await this.#d.reader.read(req.file), input);
    const recorded = await this.#record(claim.row, content);
    this.#d.logger.info(
      {
        operationId: req.operationId,
        receiptId: recorded.id,
        verdict: recorded.status,
        reason: recorded.manualCheckReason,
        checks: recorded.findings.map((f) => f.check),
      },
      "receipt reviewed",
    );
    return { review: await this.#toProto(recorded), replayed: false };
  }

  /**
   * Adds the reuse checks (which need the other operations) and records the verdict. The
   * transaction id is locked so two operations recording the same bank transfer at once
   * see each other: the first recorded keeps it, the second is flagged.
   */
  async #record(row: ReviewRow, content: ContentReview): Promise<ReviewRow> {
    const x = content.extraction;
    return this.#d.db.transaction(async (tx) => {
      const findings: Finding[] = [...content.findings];
      const readable = content.info !== undefined;
      if (readable) {
        // An earlier submission of the same bytes for another operation: the file was used before.
        const [earlier] = await tx
          .select({ operationId: receiptReviews.operationId })
          .from(receiptReviews)
          .where(
            and(
              eq(receiptReviews.sha256, row.sha256),
              ne(receiptReviews.operationId, row.operationId),
              sql`(${receiptReviews.createdAt}, ${receiptReviews.id}) < (${row.createdAt.toISOString()}::timestamptz, ${row.id}::uuid)`,
            ),
          )
          .limit(1);
        if (earlier)
          findings.push(
            finding("receipt_reused", `the same file was submitted for operation ${earlier.operationId}`),
          );
      }
      // Every key of the transfer is locked (in one global order, so two reviews cannot
      // deadlock) so two operations recording the same transfer at once see each other.
      const locked = recordedKeys(x).sort((a, b) => `${a.kind}:${a.key}`.localeCompare(`${b.kind}:${b.key}`));
      for (const key of locked)
        await tx.execute(
          sql`select pg_advisory_xact_lock(hashtextextended(${`receipts:${key.kind}:${key.key}`}, 0))`,
        );
      for (const key of reuseKeys(x)) {
        const column = key.kind === "transaction" ? receiptReviews.transactionId : receiptReviews.transferKey;
        const [other] = await tx
          .select({ operationId: receiptReviews.operationId })
          .from(receiptReviews)
          .where(and(eq(column, key.key), ne(receiptReviews.operationId, row.operationId)))
          .limit(1);
        if (other) {
          findings.push(
            finding("transaction_reused", `${key.detail} was used for operation ${other.operationId}`),
          );
          break;
        }
      }
      const verdict = decide(findings);
      const [updated] = await tx
        .update(receiptReviews)
        .set({
          status: verdict.verdict,
          manualCheckReason: verdict.verdict === "manual_check" ? verdict.reason : null,
          actualAmount: x?.amount ? x.amount.toFixed(CURRENCIES.RUB.scale) : null,
          layout: x?.layout ?? null,
          transactionId: x?.transactionId ?? null,
          transferKey: x?.transferKey ?? null,
          findings,
          extraction: summarise(content),
          reviewedAt: new Date(),
        })
        .where(eq(receiptReviews.id, row.id))
        .returning();
      return updated as ReviewRow;
    });
  }

  async getReview(req: {
    shopId: string;
    id: { case: "operationId" | "receiptId"; value: string } | { case: undefined; value?: undefined };
  }) {
    if (!req.id.case || !UUID.test(req.id.value))
      throw invalid("id", "operation_id or receipt_id (a UUID) is required");
    const row =
      req.id.case === "operationId"
        ? await this.#latest(this.#d.db, req.id.value)
        : (await this.#d.db.select().from(receiptReviews).where(eq(receiptReviews.id, req.id.value)))[0];
    if (!row || row.shopId !== req.shopId) throw notFound("review");
    return { review: await this.#toProto(row) };
  }

  async resolveManualCheck(req: {
    shopId: string;
    operationId: string;
    decision: string;
    amount?: string | undefined;
    operator: string;
    reason: string;
  }) {
    if (!UUID.test(req.operationId)) throw invalid("operation_id", "operation_id must be a UUID");
    if (req.decision !== "approve" && req.decision !== "reject")
      throw invalid("decision", "decision must be approve or reject");
    if (!req.operator.trim()) throw invalid("operator", "operator is required");
    if (!req.reason.trim()) throw invalid("reason", "reason is required");
    if (
      req.decision === "approve" &&
      (!req.amount || !DECIMAL.test(req.amount) || new Decimal(req.amount).lte(0))
    )
      throw invalid("amount", "approve needs the positive amount that arrived");
    if (req.decision === "reject" && req.amount) throw invalid("amount", "reject takes no amount");

    const result = await this.#d.db.transaction(async (tx) => {
      await tx.execute(
        sql`select pg_advisory_xact_lock(hashtextextended(${`receipts:op:${req.operationId}`}, 0))`,
      );
      const row = await this.#latest(tx, req.operationId);
      if (!row || row.shopId !== req.shopId) throw notFound("review");
      const scale = isCurrency(row.currency) ? CURRENCIES[row.currency].scale : 2;
      const amount = req.amount ? new Decimal(req.amount).toFixed(scale) : null;
      const [previous] = await tx
        .select()
        .from(receiptResolutions)
        .where(eq(receiptResolutions.reviewId, row.id));
      if (previous) {
        const same =
          previous.decision === req.decision &&
          (previous.amount === null
            ? amount === null
            : amount !== null && new Decimal(previous.amount).equals(amount));
        if (same) return { row, replayed: true };
        throw receiptAlreadyReviewed(`already resolved: ${previous.decision}`);
      }
      if (row.status !== "manual_check")
        throw receiptAlreadyReviewed(`the review is ${row.status}, not manual_check`);
      await tx.insert(receiptResolutions).values({
        id: randomUUID(),
        reviewId: row.id,
        operationId: row.operationId,
        decision: req.decision,
        amount,
        operator: req.operator.trim(),
        reason: req.reason.trim(),
        previousStatus: row.status,
        previousReason: row.manualCheckReason,
      });
      const [updated] = await tx
        .update(receiptReviews)
        .set(
          req.decision === "approve"
            ? { status: "completed", manualCheckReason: null, actualAmount: amount }
            : { status: "rejected", manualCheckReason: null },
        )
        .where(eq(receiptReviews.id, row.id))
        .returning();
      return { row: updated as ReviewRow, replayed: false };
    });
    this.#d.logger.info(
      {
        operationId: req.operationId,
        decision: req.decision,
        operator: req.operator,
        replayed: result.replayed,
      },
      "manual check resolved",
    );
    return { review: await this.#toProto(result.row), replayed: result.replayed };
  }

  async signReceiptUrls(req: { shopId: string; receiptIds: string[] }) {
    const signer = this.#signer();
    if (req.receiptIds.length > MAX_SIGN_BATCH) throw invalid("receipt_ids", `at most ${MAX_SIGN_BATCH} ids`);
    if (req.receiptIds.some((id) => !UUID.test(id)))
      throw invalid("receipt_ids", "receipt ids must be UUIDs");
    if (req.receiptIds.length === 0) return { urls: [] };
    const rows = await this.#d.db
      .select({ id: receiptReviews.id, shopId: receiptReviews.shopId, status: receiptReviews.status })
      .from(receiptReviews)
      .where(inArray(receiptReviews.id, req.receiptIds));
    const byId = new Map(rows.map((r) => [r.id, r]));
    const now = new Date();
    return {
      urls: req.receiptIds.map((id) => {
        const row = byId.get(id);
        if (!row || row.shopId !== req.shopId || row.status !== "completed") throw notFound(`receipt ${id}`);
        const { url, expiresAt } = signer.sign(id, row.shopId, now);
        return { receiptId: id, url, expiresAt: expiresAt.toISOString() };
      }),
    };
  }

  async verifyReceiptUrl(req: {
    receiptId: string;
    expires: bigint;
    signature: string;
    shopId?: string | undefined;
  }) {
    const row = await this.#verified(req);
    return { receiptId: row.id, shopId: row.shopId, operationId: row.operationId };
  }

  async getReceiptFile(req: {
    link?: { receiptId: string; expires: bigint; signature: string; shopId?: string | undefined } | undefined;
  }) {
    if (!req.link) throw invalid("link", "link is required");
    const row = await this.#verified(req.link);
    const file = await this.#d.store.get(row.sha256);
    if (!file) {
      this.#d.logger.error({ receiptId: row.id }, "receipt file missing from the store");
      throw receiptFileUnavailable();
    }
    return {
      file,
      contentType: row.contentType,
      fileName: row.fileName ?? `receipt-${row.id}.pdf`,
      sha256: row.sha256,
    };
  }

  /** Operators only: a review's stored file (see review-file.ts). */
  getReviewFile(req: Parameters<typeof getReviewFile>[1]) {
    return getReviewFile(this.#d, req);
  }

  /** Checks a link's MAC against the receipt's owning shop, the caller's shop and the clock. */
  async #verified(req: {
    receiptId: string;
    expires: bigint;
    signature: string;
    shopId?: string | undefined;
  }) {
    const signer = this.#signer();
    if (!UUID.test(req.receiptId)) throw notFound("receipt");
    const [row] = await this.#d.db.select().from(receiptReviews).where(eq(receiptReviews.id, req.receiptId));
    if (row?.status !== "completed") throw notFound("receipt");
    // Altered, another receipt's, another shop's: all the same answer, so a link cannot be probed.
    if (req.shopId !== undefined && req.shopId !== row.shopId) throw notFound("receipt");
    const outcome = signer.verify(row.id, row.shopId, Number(req.expires), req.signature);
    if (outcome === "invalid") throw notFound("receipt");
    if (outcome === "expired") throw receiptUrlExpired();
    return row;
  }

  #signer(): ReceiptUrlSigner {
    if (!this.#d.signer) throw receiptLinksUnavailable();
    return this.#d.signer;
  }

  /** The operation's latest review that did not die with its process. */
  async #latest(db: Pick<Database, "select">, operationId: string): Promise<ReviewRow | undefined> {
    const [row] = await db
      .select()
      .from(receiptReviews)
      .where(and(eq(receiptReviews.operationId, operationId), ne(receiptReviews.status, "abandoned")))
      .orderBy(desc(receiptReviews.createdAt), desc(receiptReviews.id))
      .limit(1);
    return row;
  }

  async #toProto(row: ReviewRow) {
    const [resolution] = await this.#d.db
      .select()
      .from(receiptResolutions)
      .where(eq(receiptResolutions.reviewId, row.id));
    return reviewProto(row, resolution);
  }
}

type Admission = { kind: "accept" } | { kind: "stale" } | { kind: "replay"; row: ReviewRow };

/**
 * Whether a new file is reviewed for an operation, given its latest review:
 * - none, or manual_check/not_terminal (the payer may send a better file): reviewed;
 * - the same bytes as the latest, already reviewed: that review is the answer (a retry);
 * - a review still running: refused, unless its deadline passed (its process died);
 * - completed, rejected, or manual_check/potential_fake (an operator decides; a forger
 *   must not get to try again until the checks pass): refused.
 */
function admit(latest: ReviewRow | undefined, shopId: string, sha256: string, now: Date): Admission {
  if (!latest) return { kind: "accept" };
  if (latest.shopId !== shopId) throw notFound("operation");
  if (latest.status === "reviewing") {
    if (latest.reviewDeadline.getTime() <= now.getTime()) return { kind: "stale" };
    throw receiptReviewInProgress();
  }
  if (latest.sha256 === sha256) return { kind: "replay", row: latest };
  if (latest.status === "manual_check" && latest.manualCheckReason === "not_terminal")
    return { kind: "accept" };
  throw receiptAlreadyReviewed(
    `the operation's receipt is ${latest.status}${latest.manualCheckReason ? `/${latest.manualCheckReason}` : ""}`,
  );
}

function parseTime(value: string, field: string): Date {
  const d = new Date(value);
  if (!value || Number.isNaN(d.getTime())) throw invalid(field, `${field} must be an RFC 3339 time`);
  return d;
}

/** The stored content type follows the bytes, not the uploader's claim. */
function sniffContentType(bytes: Uint8Array, declared: string): string {
  if (Buffer.from(bytes.subarray(0, 1024)).toString("latin1").includes("%PDF-")) return "application/pdf";
  return /^[\w.+-]+\/[\w.+-]+$/.test(declared) ? declared : "application/octet-stream";
}

function summarise(content: ContentReview): Record<string, unknown> {
  const x = content.extraction;
  return {
    pageCount: content.pageCount,
    producer: content.info?.producer,
    creator: content.info?.creator,
    creationDate: content.info?.creationDate,
    modDate: content.info?.modDate,
    ...(x && {
      layout: x.layout,
      amount: x.amount?.toFixed(2),
      amountReadings: x.amountReadings,
      recipientName: x.recipientName,
      recipientCard: x.recipientCard ? `${x.recipientCard.head}…${x.recipientCard.tail}` : undefined,
      recipientPhone: x.recipientPhone,
      recipientBank: x.recipientBank,
      dateTime: x.dateTime?.toISOString(),
      status: x.status,
      statusTexts: x.statusTexts,
      transactionId: x.transactionId,
      transferKey: x.transferKey,
    }),
  };
}

function reviewProto(row: ReviewRow, resolution: ResolutionRow | undefined) {
  return {
    receiptId: row.id,
    operationId: row.operationId,
    shopId: row.shopId,
    verdict: row.status,
    manualCheckReason: row.manualCheckReason ?? undefined,
    actualAmount: row.actualAmount ?? undefined,
    findings: row.findings,
    layout: row.layout ?? undefined,
    transactionId: row.transactionId ?? undefined,
    sha256: row.sha256,
    submittedAt: row.createdAt.toISOString(),
    reviewedAt: row.reviewedAt?.toISOString() ?? "",
    resolution: resolution && {
      decision: resolution.decision,
      amount: resolution.amount ?? undefined,
      operator: resolution.operator,
      reason: resolution.reason,
      resolvedAt: resolution.createdAt.toISOString(),
    },
  };
}
