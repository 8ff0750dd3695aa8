import { buildReceipt, editAmountIncrementally, receiptPdf, receiptSpec } from "@gw/testkit/receipts";
import { describe, expect, it } from "vitest";
import { replacePageByUpdate } from "../testing/writers.ts";
import { readRevisions, savesOf, signatureKey } from "./revisions.ts";

/** A hand-written file: `bodies` as objects 1…n, one xref section per save, offsets true. */
function handWritten(saves: string[][], linearizedLength?: "true" | "wrong"): Uint8Array {
  let text = "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n";
  let prev: number | undefined;
  let num = 0;
  for (const bodies of saves) {
    const offsets: [number, number][] = [];
    for (const body of bodies) {
      num++;
      offsets.push([num, text.length]);
      text += `${num} 0 obj\n${body}\nendobj\n`;
    }
    const at = text.length;
    text += "xref\n";
    for (const [n, o] of offsets) text += `${n} 1\n${String(o).padStart(10, "0")} 00000 n \n`;
    text += `trailer\n<< /Size ${num + 1} /Root 2 0 R${prev === undefined ? "" : ` /Prev ${prev}`} >>\nstartxref\n${at}\n%%EOF\n`;
    prev = at;
  }
  if (linearizedLength) {
    const length = linearizedLength === "true" ? text.length : text.length + 100;
    text = text.replace("/L 0000000000", `/L ${String(length).padStart(10, "0")}`);
  }
  return new Uint8Array(Buffer.from(text, "latin1"));
}

describe("a file's revisions read from its structure", () => {
  it("finds one save and pdf-lib's traits in a receipt written once", async () => {
    const r = readRevisions(await receiptPdf(receiptSpec("sberbank", "card")));
    expect({ saves: savesOf(r), sections: r.sections, redefined: r.redefined }).toEqual({
      saves: 1,
      sections: 1,
      redefined: [],
    });
    expect(signatureKey(r.signature)).toBe(
      "pdf 1.7, comment 81818181, xref table, no object streams, no /ID",
    );
  });

  it("finds two saves in a receipt edited by an incremental update", async () => {
    const r = readRevisions(await editAmountIncrementally(receiptSpec("vtb", "card"), "1 500,00 ₽"));
    expect(savesOf(r)).toBe(2);
    expect(r.sections).toBe(2);
    expect(r.redefined.length).toBeGreaterThan(0);
  });

  it("finds the update when the earlier %%EOF is blanked, the last one missing and the page overridden from an object stream", async () => {
    const original = await receiptPdf(receiptSpec("alfabank", "phone", { amount: "150.00" }));
    const forged = (await buildReceipt(receiptSpec("alfabank", "phone"))).doc;
    const r = readRevisions(
      await replacePageByUpdate(original, forged, {
        objectStream: true,
        hideEarlierEof: true,
        noFinalEof: true,
      }),
    );
    expect(r.eofMarkers).toBe(0);
    expect(r.sections).toBe(2);
    expect(r.overriddenByStream.length).toBeGreaterThan(0);
    expect(savesOf(r)).toBe(2);
  });

  it("counts a linearized file's two sections as one save when /L is the file's length", () => {
    const file = handWritten(
      [["<< /Linearized 1 /L 0000000000 >>", "<< /Type /Catalog >>"], ["<< /Type /Pages >>"]],
      "true",
    );
    const r = readRevisions(file);
    expect({ linearized: r.linearized, sections: r.sections, saves: savesOf(r) }).toEqual({
      linearized: true,
      sections: 2,
      saves: 1,
    });
  });

  it("does not believe a /Linearized header whose /L is not the file's length", () => {
    const file = handWritten(
      [["<< /Linearized 1 /L 0000000000 >>", "<< /Type /Catalog >>"], ["<< /Type /Pages >>"]],
      "wrong",
    );
    expect(savesOf(readRevisions(file))).toBe(2);
  });

  it("never throws on bytes that are not a PDF structure", () => {
    const r = readRevisions(
      new Uint8Array(Buffer.from("%PDF-1.4\nstartxref\n999999\n%%EOF\n/Type /ObjStm /N 3")),
    );
    expect(r.sections).toBe(0);
  });
});
