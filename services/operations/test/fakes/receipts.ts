import { createHash, randomUUID } from "node:crypto";
import { clone, create } from "@bufbuild/protobuf";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import {
  ReceiptsService,
  ResolutionSchema,
  type Review,
  ReviewSchema,
} from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { fakeErrors } from "./errors.ts";

/** A verdict the fake gives a file: what the real service's checks would conclude. */
export type ScriptedVerdict =
  | { verdict: "completed"; actualAmount?: string }
  | { verdict: "manual_check"; reason: "potential_fake" | "not_terminal"; actualAmount?: string }
  | { verdict: "rejected" };

/**
 * The receipts service as operations uses it (SubmitReceipt, GetReview,
 * ResolveManualCheck, SignReceiptUrls), in memory, behind connect's router transport.
 * It reads no PDF: a file's verdict is scripted (`judge`), and a file nobody scripted is
 * reviewed as unreadable (manual_check / not_terminal), as the real checks review bytes
 * that are no receipt. Kept as the real service keeps them: the same bytes replayed for
 * an operation, a new file only while its latest verdict is manual_check/not_terminal
 * (or there is none), the latest review per operation and shop, an operator's decision
 * on manual_check once (the same one replayed), links only for completed receipts of
 * the shop. `receipts.contract.ts` checks it against the real service.
 */
export class FakeReceipts {
  readonly #verdicts = new Map<string, ScriptedVerdict>();
  readonly #reviews = new Map<string, Review>();
  /** operation id → its reviews' ids, oldest first. */
  readonly #byOperation = new Map<string, string[]>();

  /** Scripts the verdict of `file`, whatever operation it is submitted for. */
  judge(file: Uint8Array, verdict: ScriptedVerdict): void {
    this.#verdicts.set(sha256(file), verdict);
  }

  client(): Client<typeof ReceiptsService> {
    const transport = createRouterTransport(({ service }) => {
      service(ReceiptsService, {
        submitReceipt: async (req) => {
          if (!/^[0-9a-f-]{36}$/.test(req.operationId))
            throw invalid("operation_id", "operation_id must be a uuid");
          if (!/^\d+(\.\d{1,2})?$/.test(req.expectedAmount))
            throw invalid("expected_amount", "expected_amount must be a decimal string");
          if (req.method !== "WT_RUB_C2C" && req.method !== "WT_RUB_PHONE")
            throw invalid("method", "method is not supported");
          const hash = sha256(req.file);
          const latest = this.#latest(req.operationId);
          if (latest?.sha256 === hash && latest.shopId === req.shopId)
            return { review: latest, replayed: true };
          if (latest && !(latest.verdict === "manual_check" && latest.manualCheckReason === "not_terminal"))
            throw fakeErrors.alreadyReviewed("the receipt was reviewed already");
          const scripted = this.#verdicts.get(hash) ?? { verdict: "manual_check", reason: "not_terminal" };
          const now = new Date().toISOString();
          const review = create(ReviewSchema, {
            receiptId: randomUUID(),
            operationId: req.operationId,
            shopId: req.shopId,
            verdict: scripted.verdict,
            manualCheckReason: scripted.verdict === "manual_check" ? scripted.reason : undefined,
            actualAmount:
              scripted.verdict === "completed"
                ? (scripted.actualAmount ?? req.expectedAmount)
                : scripted.verdict === "manual_check"
                  ? scripted.actualAmount
                  : undefined,
            sha256: hash,
            submittedAt: now,
            reviewedAt: now,
          });
          this.#reviews.set(review.receiptId, review);
          this.#byOperation.set(req.operationId, [
            ...(this.#byOperation.get(req.operationId) ?? []),
            review.receiptId,
          ]);
          return { review, replayed: false };
        },
        getReview: async (req) => {
          const review =
            req.id.case === "operationId"
              ? this.#latest(req.id.value)
              : req.id.case === "receiptId"
                ? this.#reviews.get(req.id.value)
                : undefined;
          if (!review || review.shopId !== req.shopId) throw notFound();
          return { review };
        },
        resolveManualCheck: async (req) => {
          const review = this.#latest(req.operationId);
          if (!review || review.shopId !== req.shopId) throw notFound();
          if (req.decision !== "approve" && req.decision !== "reject")
            throw invalid("decision", "decision must be approve or reject");
          if (req.decision === "approve" && !req.amount)
            throw invalid("amount", "amount is required to approve");
          const done = review.resolution;
          if (done) {
            if (done.decision === req.decision && (done.amount ?? "") === (req.amount ?? ""))
              return { review, replayed: true };
            throw fakeErrors.alreadyReviewed("resolved differently before");
          }
          if (review.verdict !== "manual_check")
            throw fakeErrors.alreadyReviewed("the review is not in manual_check");
          const resolved = clone(ReviewSchema, review);
          resolved.verdict = req.decision === "approve" ? "completed" : "rejected";
          if (req.decision === "approve") resolved.actualAmount = req.amount;
          resolved.resolution = create(ResolutionSchema, {
            decision: req.decision,
            amount: req.amount,
            operator: req.operator,
            reason: req.reason,
            resolvedAt: new Date().toISOString(),
          });
          this.#reviews.set(resolved.receiptId, resolved);
          return { review: resolved, replayed: false };
        },
        signReceiptUrls: async (req) => {
          const expiresAt = new Date(Date.now() + 60_000).toISOString();
          return {
            urls: req.receiptIds.map((receiptId) => {
              const review = this.#reviews.get(receiptId);
              if (!review || review.shopId !== req.shopId || review.verdict !== "completed") throw notFound();
              return { receiptId, url: `https://receipts.invalid/r/${receiptId}?sig=fake`, expiresAt };
            }),
          };
        },
      });
    });
    return createClient(ReceiptsService, transport);
  }

  #latest(operationId: string): Review | undefined {
    const id = this.#byOperation.get(operationId)?.at(-1);
    return id === undefined ? undefined : this.#reviews.get(id);
  }
}

const sha256 = (file: Uint8Array) => createHash("sha256").update(file).digest("hex");

const invalid = fakeErrors.validation;

const notFound = () => fakeErrors.notFound("no such review");
