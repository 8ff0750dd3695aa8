import { deflateBombPdf, receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import { PDFDocument } from "pdf-lib";
import { describe, expect, it } from "vitest";
import { DEFAULT_PARSE_LIMITS, PdfReader } from "./parse.ts";

const failedCheck = (outcome: Awaited<ReturnType<PdfReader["read"]>>) =>
  outcome.kind === "failed" ? outcome.check : "read";

describe("PdfReader limits", () => {
  it("reads a genuine receipt's metadata and text", async () => {
    const outcome = await new PdfReader().read(await receiptPdf(receiptSpec("vtb", "card")));
    expect(outcome.kind).toBe("ok");
    if (outcome.kind !== "ok") return;
    expect(outcome.info.producer).toMatch(/iText/);
    expect(outcome.pages[0]?.map((i) => i.str)).toContain("Квитанция об операции");
  });

  it("ends a decompression bomb at the memory or time limit instead of hanging", async () => {
    const reader = new PdfReader({ ...DEFAULT_PARSE_LIMITS, timeoutMs: 3000, memoryMb: 64 });
    const outcome = await reader.read(deflateBombPdf(128));
    expect(["parse_timeout", "parse_memory"]).toContain(failedCheck(outcome));
  });

  it("stops a read that outlives the time limit", async () => {
    const reader = new PdfReader({ ...DEFAULT_PARSE_LIMITS, timeoutMs: 1 });
    expect(failedCheck(await reader.read(await receiptPdf(receiptSpec("sberbank", "card"))))).toBe(
      "parse_timeout",
    );
  });

  it("refuses more pages than the limit", async () => {
    const doc = await PDFDocument.create();
    for (let i = 0; i < 7; i++) doc.addPage();
    expect(failedCheck(await new PdfReader().read(await doc.save()))).toBe("too_many_pages");
  });

  it("refuses more objects than the limit before parsing", async () => {
    const reader = new PdfReader({ ...DEFAULT_PARSE_LIMITS, maxObjects: 5 });
    expect(failedCheck(await reader.read(await receiptPdf(receiptSpec("tbank", "card"))))).toBe(
      "too_many_objects",
    );
  });

  it("answers parse_capacity at once when the queue is full", async () => {
    const reader = new PdfReader(DEFAULT_PARSE_LIMITS, 1, 0);
    const file = await receiptPdf(receiptSpec("alfabank", "card"));
    const [first, second] = await Promise.all([reader.read(file), reader.read(file)]);
    expect([failedCheck(first), failedCheck(second)]).toEqual(["read", "parse_capacity"]);
  });
});
