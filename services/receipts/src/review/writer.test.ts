import { describe, expect, it } from "vitest";
import { issuerById } from "../layouts/banks.ts";
import { readRevisions } from "../pdf/revisions.ts";
import { type Bank, buildReceipt, receiptSpec } from "../testing/receipt-factory.ts";
import { EDITORS, RESAVERS, type WriterProfile, writeAs } from "../testing/writers.ts";
import { familyOf, writerFindings } from "./writer.ts";

const AT = new Date(Date.UTC(2026, 2, 12, 11, 0));

/** The checks that fire for `bank`'s receipt written by `w` with `producer` in its metadata. */
async function checksFor(bank: Bank, w: WriterProfile | undefined, producer: string, modified = AT) {
  if (!w) throw new Error("no such writer");
  const bytes = await writeAs((await buildReceipt(receiptSpec(bank, "card", { at: AT }))).doc, w, {
    producer,
    created: AT,
    modified,
  });
  return writerFindings({ producer }, readRevisions(bytes), issuerById(bank), AT, modified).map(
    (f) => f.check,
  );
}

const resaver = (name: string) => RESAVERS.find((w) => w.producer.startsWith(name));

describe("who wrote the file", () => {
  it("gives a producer's family without its versions", () => {
    expect(familyOf("iText® 8.0.2 ©2000-2023 Apryse Group NV")).toBe("iText® # # Apryse Group NV");
  });

  it("lets a Chrome print of a T-Bank receipt pass, though T-Bank's own engine is Skia too", async () => {
    expect(await checksFor("tbank", resaver("Skia"), "Skia/PDF m130")).toEqual([]);
  });

  it("lets a desktop viewer's save as keep the creation date and set a later modification", async () => {
    const later = new Date(AT.getTime() + 3 * 86_400_000);
    expect(
      await checksFor("vtb", resaver("macOS"), "macOS Version 15.1 (Build 24B83) Quartz PDFContext", later),
    ).toEqual([]);
  });

  it("flags a share sheet's name on a file no share sheet built", async () => {
    const editor = EDITORS.find((w) => w.producer.startsWith("PDFgear"));
    expect(await checksFor("alfabank", editor, "iOS Version 18.1 (Build 22B83) Quartz PDFContext")).toEqual([
      "writer_mismatch",
    ]);
  });

  it("flags an editor on a bank without a layout module when it is no report engine", async () => {
    const editor = EDITORS.find((w) => w.producer.startsWith("Icecream"));
    expect(await checksFor("ozon", editor, "Icecream PDF Editor 3.21")).toEqual(["foreign_producer"]);
  });
});
