import { randomUUID } from "node:crypto";
import { errorInfo } from "@gw/rpc";
import { notPdf, receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, OTHER_SHOP, SHOP, startHarness, submission } from "./testing/harness.ts";

/** The public code of a call's failure. */
async function failureOf(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
  } catch (err) {
    return errorInfo(err)?.code;
  }
  return "no failure";
}

describe("receipts service", () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });

  afterAll(async () => {
    await h?.stop();
  });

  it("stores each distinct file once and counts its bytes", async () => {
    const before = await h.client.getStorageStats({});
    const file = await receiptPdf(receiptSpec("sberbank", "card"));
    await h.client.submitReceipt(submission("card", file));
    await h.client.submitReceipt(submission("card", file));
    const after = await h.client.getStorageStats({});
    expect(after.files - before.files).toBe(1n);
    expect(after.bytes - before.bytes).toBe(BigInt(file.length));
  });

  it("answers the recorded review when the same file is submitted again for the same operation", async () => {
    const req = submission("phone", await receiptPdf(receiptSpec("tbank", "phone")));
    const first = await h.client.submitReceipt(req);
    const again = await h.client.submitReceipt(req);
    expect(first.review?.verdict).toBe("completed");
    expect(again.replayed).toBe(true);
    expect(again.review?.receiptId).toBe(first.review?.receiptId);
  });

  it("reviews a new file after a not_terminal verdict and refuses one after completion", async () => {
    const operationId = randomUUID();
    const first = await h.client.submitReceipt(submission("card", notPdf(), { operationId }));
    expect(first.review).toMatchObject({ verdict: "manual_check", manualCheckReason: "not_terminal" });

    const second = await h.client.submitReceipt(
      submission("card", await receiptPdf(receiptSpec("vtb", "card")), { operationId }),
    );
    expect(second.review?.verdict).toBe("completed");
    expect(second.review?.receiptId).not.toBe(first.review?.receiptId);

    const third = submission("card", await receiptPdf(receiptSpec("alfabank", "card")), { operationId });
    expect(await failureOf(h.client.submitReceipt(third))).toBe("receipt_already_reviewed");
    expect(
      (await h.client.getReview({ shopId: SHOP, id: { case: "operationId", value: operationId } })).review
        ?.receiptId,
    ).toBe(second.review?.receiptId);
  });

  it("refuses a new file while the review is manual_check/potential_fake", async () => {
    const operationId = randomUUID();
    const forged = await receiptPdf(receiptSpec("sberbank", "card", { producer: "Adobe Acrobat Pro 2024" }));
    const first = await h.client.submitReceipt(submission("card", forged, { operationId }));
    expect(first.review?.manualCheckReason).toBe("potential_fake");
    const other = submission("card", await receiptPdf(receiptSpec("sberbank", "card")), { operationId });
    expect(await failureOf(h.client.submitReceipt(other))).toBe("receipt_already_reviewed");
  });

  it("reviews only one of two files submitted at once for the same operation", async () => {
    const operationId = randomUUID();
    const files = [
      await receiptPdf(receiptSpec("vtb", "card")),
      await receiptPdf(receiptSpec("sberbank", "card")),
    ];
    const results = await Promise.allSettled(
      files.map((file) => h.client.submitReceipt(submission("card", file, { operationId }))),
    );
    const refused = results.flatMap((r) => (r.status === "rejected" ? [errorInfo(r.reason)?.code] : []));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(["receipt_review_in_progress", "receipt_already_reviewed"]).toContain(refused[0]);
  });

  it("refuses a file over the storage limit without storing it", async () => {
    const small = await startHarness({ RECEIPT_STORE_MAX_BYTES: "4096" });
    try {
      const req = submission("card", new Uint8Array(5000).fill(0x25));
      expect(await failureOf(small.client.submitReceipt(req))).toBe("receipt_too_large");
      expect((await small.client.getStorageStats({})).files).toBe(0n);
    } finally {
      await small.stop();
    }
  });

  it("validates a submission before storing anything", async () => {
    const file = await receiptPdf(receiptSpec("sberbank", "card"));
    expect(await failureOf(h.client.submitReceipt(submission("card", file, { operationId: "nope" })))).toBe(
      "validation_failed",
    );
    expect(await failureOf(h.client.submitReceipt(submission("card", file, { expectedAmount: "1,5" })))).toBe(
      "validation_failed",
    );
    expect(await failureOf(h.client.submitReceipt(submission("card", file, { method: "CASH" })))).toBe(
      "validation_failed",
    );
  });

  describe("manual check", () => {
    it("approves with the amount that arrived, keeps an audit record, and replays the same decision", async () => {
      const operationId = randomUUID();
      const file = await receiptPdf(receiptSpec("alfabank", "phone", { amount: "1000.00" }));
      const submitted = await h.client.submitReceipt(submission("phone", file, { operationId }));
      expect(submitted.review).toMatchObject({ verdict: "manual_check", actualAmount: "1000.00" });

      const decision = {
        shopId: SHOP,
        operationId,
        decision: "approve",
        amount: "1000.00",
        operator: "ops@example.com",
        reason: "bank statement shows 1000.00 arrived",
      };
      const resolved = await h.client.resolveManualCheck(decision);
      expect(resolved.review).toMatchObject({ verdict: "completed", actualAmount: "1000.00" });
      expect(resolved.review?.resolution).toMatchObject({ decision: "approve", operator: "ops@example.com" });
      expect(resolved.review?.findings.map((f) => f.check)).toEqual(["amount_mismatch"]);

      expect((await h.client.resolveManualCheck(decision)).replayed).toBe(true);
      expect(
        await failureOf(h.client.resolveManualCheck({ ...decision, decision: "reject", amount: undefined })),
      ).toBe("receipt_already_reviewed");
    });

    it("rejects, and refuses to resolve a review that is not in manual_check", async () => {
      const operationId = randomUUID();
      await h.client.submitReceipt(submission("card", notPdf(), { operationId }));
      const rejected = await h.client.resolveManualCheck({
        shopId: SHOP,
        operationId,
        decision: "reject",
        operator: "ops",
        reason: "payer sent a photo of a cat",
      });
      expect(rejected.review?.verdict).toBe("rejected");

      const done = randomUUID();
      await h.client.submitReceipt(
        submission("card", await receiptPdf(receiptSpec("vtb", "card")), { operationId: done }),
      );
      const approve = {
        shopId: SHOP,
        operationId: done,
        decision: "approve",
        amount: "1500.00",
        operator: "o",
        reason: "r",
      };
      expect(await failureOf(h.client.resolveManualCheck(approve))).toBe("receipt_already_reviewed");
      expect(await failureOf(h.client.resolveManualCheck({ ...approve, shopId: OTHER_SHOP }))).toBe(
        "not_found",
      );
    });
  });

  describe("signed receipt links", () => {
    let receiptId: string;

    beforeAll(async () => {
      const file = await receiptPdf(receiptSpec("sberbank", "phone"));
      const { review } = await h.client.submitReceipt(submission("phone", file));
      receiptId = review?.receiptId ?? "";
    });

    const linkOf = (url: string) => {
      const u = new URL(url);
      return {
        receiptId: u.pathname.split("/").at(-1) ?? "",
        expires: BigInt(u.searchParams.get("exp") ?? "0"),
        signature: u.searchParams.get("sig") ?? "",
      };
    };

    it("signs a link that downloads the exact file", async () => {
      const { urls } = await h.client.signReceiptUrls({ shopId: SHOP, receiptIds: [receiptId] });
      const url = urls[0]?.url ?? "";
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/receipts\/[0-9a-f-]+\?exp=\d+&sig=[\w-]+$/);
      const file = await h.client.getReceiptFile({ link: linkOf(url) });
      expect(file.contentType).toBe("application/pdf");
      const review = await h.client.getReview({ shopId: SHOP, id: { case: "receiptId", value: receiptId } });
      expect(file.sha256).toBe(review.review?.sha256);
      expect(Buffer.from(file.file).subarray(0, 5).toString()).toBe("%PDF-");
    });

    it("refuses an altered link, another shop's link and an expired link", async () => {
      const { urls } = await h.client.signReceiptUrls({ shopId: SHOP, receiptIds: [receiptId] });
      const link = linkOf(urls[0]?.url ?? "");
      expect(await failureOf(h.client.verifyReceiptUrl({ ...link, expires: link.expires + 60n }))).toBe(
        "not_found",
      );
      expect(
        await failureOf(
          h.client.verifyReceiptUrl({ ...link, signature: `${link.signature.slice(0, -2)}AA` }),
        ),
      ).toBe("not_found");
      expect(await failureOf(h.client.verifyReceiptUrl({ ...link, shopId: OTHER_SHOP }))).toBe("not_found");
      expect((await h.client.verifyReceiptUrl({ ...link, shopId: SHOP })).operationId).toMatch(/-/);
      expect(await failureOf(h.client.signReceiptUrls({ shopId: OTHER_SHOP, receiptIds: [receiptId] }))).toBe(
        "not_found",
      );

      const { ReceiptUrlSigner } = await import("./signing.ts");
      const { URL_SECRET } = await import("./testing/harness.ts");
      const past = new ReceiptUrlSigner(URL_SECRET, "http://127.0.0.1:8080", 60).sign(
        receiptId,
        SHOP,
        new Date(Date.now() - 120_000),
      );
      expect(await failureOf(h.client.getReceiptFile({ link: linkOf(past.url) }))).toBe(
        "receipt_url_expired",
      );
    });

    it("signs nothing for a receipt that is not completed", async () => {
      const { review } = await h.client.submitReceipt(submission("card", notPdf()));
      expect(
        await failureOf(h.client.signReceiptUrls({ shopId: SHOP, receiptIds: [review?.receiptId ?? ""] })),
      ).toBe("not_found");
    });
  });
});
