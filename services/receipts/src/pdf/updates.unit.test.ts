// What a later revision changed: an edit of the page is evidence, a signature or a
// metadata update is not (src/pdf/updates.ts through scanStructure).

import {
  appendIncrementalUpdate,
  editAmountIncrementally,
  receiptPdf,
  receiptSpec,
} from "@gw/testkit/receipts";
import { PDFHexString, PDFName } from "pdf-lib";
import { describe, expect, it } from "vitest";
import { scanStructure } from "./structure.ts";

const genuine = () => receiptPdf(receiptSpec("sberbank", "card"));

describe("what the later revisions of a file changed", () => {
  it("finds nothing after a single save", async () => {
    expect(scanStructure(await genuine()).updates).toEqual({ content: [], signed: false, other: 0 });
  });

  it("finds the page and its new content in an update that types over the amount", async () => {
    const edited = await editAmountIncrementally(
      receiptSpec("sberbank", "card", { amount: "150.00" }),
      "1 500,00 ₽",
    );
    const { content, signed } = scanStructure(edited).updates;
    expect(signed).toBe(false);
    expect(content.some((c) => c.includes("a page"))).toBe(true);
    expect(content.some((c) => c.includes("content stream"))).toBe(true);
  });

  it("takes an update that only changes the metadata for no edit", async () => {
    const updated = await appendIncrementalUpdate(await genuine(), async (doc) => {
      doc.setKeywords(["receipt"]);
    });
    const { updates, revisions } = scanStructure(updated);
    expect(revisions.sections).toBe(2);
    expect(updates.content).toEqual([]);
    expect(updates.other).toBeGreaterThan(0);
  });

  it("takes a signature (its /Sig, widget and appearance) for no edit", async () => {
    const signed = await appendIncrementalUpdate(await genuine(), async (doc) => {
      const ctx = doc.context;
      const sig = ctx.register(
        ctx.obj({
          Type: "Sig",
          Filter: "Adobe.PPKLite",
          SubFilter: "adbe.pkcs7.detached",
          ByteRange: [0, 0, 0, 0],
          Contents: PDFHexString.of("00".repeat(64)),
        }),
      );
      const appearance = ctx.register(
        ctx.stream("", { Type: "XObject", Subtype: "Form", BBox: [0, 0, 0, 0] }),
      );
      const widget = ctx.register(
        ctx.obj({
          Type: "Annot",
          Subtype: "Widget",
          FT: "Sig",
          Rect: [0, 0, 0, 0],
          V: sig,
          AP: { N: appearance },
        }),
      );
      doc.getPage(0).node.set(PDFName.of("Annots"), ctx.obj([widget]));
      doc.catalog.set(PDFName.of("AcroForm"), ctx.obj({ Fields: [widget], SigFlags: 3 }));
    });
    const { updates } = scanStructure(signed);
    expect(updates.signed).toBe(true);
    expect(updates.content).toEqual([]);
  });
});
