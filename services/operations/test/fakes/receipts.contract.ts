import { randomUUID } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import type { ReceiptsService, SubmitReceiptRequest } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { errorInfo } from "@gw/rpc";
import { describe, expect, it } from "vitest";

type Receipts = Client<typeof ReceiptsService>;
type Submission = Omit<SubmitReceiptRequest, "$typeName" | "$unknown" | "requisites"> & {
  requisites: { number: string; name?: string };
};

/** What `make` gives: a client, two shops, and files the service reviews as completed or as unreadable. */
export interface ReceiptsUnderTest {
  client: Receipts;
  shopId: string;
  otherShopId: string;
  /** A card submission (1500.00 RUB) of `file` for `operationId`, its requisites as a genuine receipt shows them. */
  submission(file: Uint8Array, operationId: string): Submission;
  /** A new file the service reviews as completed for `submission`. */
  genuine(): Promise<Uint8Array>;
  /** A file that is no receipt: manual_check / not_terminal. */
  unreadable(): Uint8Array;
}

const codeOf = (call: Promise<unknown>) =>
  call.then(
    () => "resolved",
    (err: unknown) => errorInfo(err)?.code ?? String(err),
  );

/**
 * What operations relies on in the receipts service (confirm.ts, under-review.ts),
 * checked on the real service (receipts.test.ts) and on `FakeReceipts`
 * (receipts.unit.test.ts).
 */
export function describeReceiptsContract(name: string, make: () => Promise<ReceiptsUnderTest>): void {
  describe(`${name}: the receipts service operations uses`, () => {
    it("completes a genuine receipt with the expected amount, and answers the same bytes with the same review", async () => {
      const r = await make();
      const req = r.submission(await r.genuine(), randomUUID());
      const first = await r.client.submitReceipt(req);
      expect(first.review).toMatchObject({ verdict: "completed", actualAmount: "1500.00", shopId: r.shopId });
      const again = await r.client.submitReceipt(req);
      expect({ replayed: again.replayed, id: again.review?.receiptId }).toEqual({
        replayed: true,
        id: first.review?.receiptId,
      });
    });

    it("reviews another file after not_terminal, refuses one after completion, and reads the latest review", async () => {
      const r = await make();
      const operationId = randomUUID();
      const first = await r.client.submitReceipt(r.submission(r.unreadable(), operationId));
      expect(first.review).toMatchObject({ verdict: "manual_check", manualCheckReason: "not_terminal" });
      const second = await r.client.submitReceipt(r.submission(await r.genuine(), operationId));
      expect(second.review?.verdict).toBe("completed");
      expect(second.review?.receiptId).not.toBe(first.review?.receiptId);
      expect(await codeOf(r.client.submitReceipt(r.submission(await r.genuine(), operationId)))).toBe(
        "receipt_already_reviewed",
      );
      const latest = await r.client.getReview({
        shopId: r.shopId,
        id: { case: "operationId", value: operationId },
      });
      expect(latest.review?.receiptId).toBe(second.review?.receiptId);
      const byId = await r.client.getReview({
        shopId: r.shopId,
        id: { case: "receiptId", value: first.review?.receiptId ?? "" },
      });
      expect(byId.review?.verdict).toBe("manual_check");
      expect(
        await codeOf(
          r.client.getReview({ shopId: r.otherShopId, id: { case: "operationId", value: operationId } }),
        ),
      ).toBe("not_found");
      expect(
        await codeOf(
          r.client.getReview({ shopId: r.shopId, id: { case: "operationId", value: randomUUID() } }),
        ),
      ).toBe("not_found");
    });

    it("takes an operator's decision on manual_check once, replays the same one, and refuses any other", async () => {
      const r = await make();
      const operationId = randomUUID();
      await r.client.submitReceipt(r.submission(r.unreadable(), operationId));
      const decision = {
        shopId: r.shopId,
        operationId,
        decision: "reject",
        operator: "ops",
        reason: "a cat",
      };
      const rejected = await r.client.resolveManualCheck(decision);
      expect(rejected.review).toMatchObject({
        verdict: "rejected",
        resolution: { decision: "reject", operator: "ops" },
      });
      expect(rejected.replayed).toBe(false);
      expect((await r.client.resolveManualCheck(decision)).replayed).toBe(true);
      expect(
        await codeOf(r.client.resolveManualCheck({ ...decision, decision: "approve", amount: "1500.00" })),
      ).toBe("receipt_already_reviewed");
      expect(await codeOf(r.client.resolveManualCheck({ ...decision, shopId: r.otherShopId }))).toBe(
        "not_found",
      );

      const done = randomUUID();
      await r.client.submitReceipt(r.submission(await r.genuine(), done));
      expect(
        await codeOf(
          r.client.resolveManualCheck({
            ...decision,
            operationId: done,
            decision: "approve",
            amount: "1500.00",
          }),
        ),
      ).toBe("receipt_already_reviewed");
    });

    it("signs links for a shop's completed receipts, in order, and none for another shop's or an unfinished one", async () => {
      const r = await make();
      const a = await r.client.submitReceipt(r.submission(await r.genuine(), randomUUID()));
      const b = await r.client.submitReceipt(r.submission(await r.genuine(), randomUUID()));
      const open = await r.client.submitReceipt(r.submission(r.unreadable(), randomUUID()));
      const ids = [b.review?.receiptId ?? "", a.review?.receiptId ?? ""];
      const signed = await r.client.signReceiptUrls({ shopId: r.shopId, receiptIds: ids });
      expect(signed.urls.map((u) => u.receiptId)).toEqual(ids);
      for (const u of signed.urls) expect(u.url).toContain(u.receiptId);
      expect(await codeOf(r.client.signReceiptUrls({ shopId: r.otherShopId, receiptIds: ids }))).toBe(
        "not_found",
      );
      expect(
        await codeOf(
          r.client.signReceiptUrls({ shopId: r.shopId, receiptIds: [open.review?.receiptId ?? ""] }),
        ),
      ).toBe("not_found");
    });
  });
}
