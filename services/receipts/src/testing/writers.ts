// Test support: how different programs write the same PDF, and how editors change one
// after the fact. A writer profile emulates a program's file structure (header version,
// binary comment, cross-reference table or stream, object streams, trailer /ID) on top of
// pdf-lib; the update writers append real incremental updates in the ways editors do.
import { createHash } from "node:crypto";
import { PDFDocument, PDFHexString, PDFName, type PDFObject, type PDFRef, PDFStream } from "pdf-lib";

/** How one program writes a PDF. */
export interface WriterProfile {
  /** What the program puts in /Producer; `{v}` is replaced by a version. */
  producer: string;
  creator?: string | undefined;
  versions: readonly string[];
  header: "1.3" | "1.4" | "1.5" | "1.6" | "1.7";
  /** The four bytes of the binary comment on the second line. */
  binary: string;
  objectStreams: boolean;
  id: boolean;
}

/**
 * The engines that write each bank's genuine receipts. Their structure is pdf-lib's own
 * (PDF 1.7, a cross-reference table, no /ID), as the receipt factory's fixtures are: the
 * fingerprints are learned from those, and editors and re-savers differ from them.
 */
export const BANK_WRITERS = {
  sberbank: [
    {
      producer: "JasperReports Library version {v}",
      creator: "SberBank Online",
      versions: ["6.20.6", "6.21.0", "6.19.1", "6.20.1"],
      header: "1.7",
      binary: "\x81\x81\x81\x81",
      objectStreams: false,
      id: false,
    },
  ],
  tbank: [
    {
      producer: "Skia/PDF m{v}",
      creator: "T-Bank",
      versions: ["124", "126", "120", "128"],
      header: "1.7",
      binary: "\x81\x81\x81\x81",
      objectStreams: false,
      id: false,
    },
  ],
  vtb: [
    {
      producer: "iText® {v} ©2000-2023 iText Group NV",
      creator: "VTB Online",
      versions: ["7.2.5", "7.2.3", "8.0.2"],
      header: "1.7",
      binary: "\x81\x81\x81\x81",
      objectStreams: false,
      id: false,
    },
  ],
  alfabank: [
    {
      producer: "Apache FOP Version {v}",
      creator: "Alfa-Online",
      versions: ["2.9", "2.8", "2.7"],
      header: "1.7",
      binary: "\x81\x81\x81\x81",
      objectStreams: false,
      id: false,
    },
  ],
  ozon: [
    {
      producer: "OpenPDF {v}",
      creator: "Ozon Bank",
      versions: ["1.3.30", "1.3.43", "2.0.2"],
      header: "1.7",
      binary: "\x81\x81\x81\x81",
      objectStreams: false,
      id: false,
    },
  ],
  raiffeisen: [
    {
      producer: "Qt {v}",
      creator: "wkhtmltopdf 0.12.6",
      versions: ["4.8.7", "5.15.2"],
      header: "1.7",
      binary: "\x81\x81\x81\x81",
      objectStreams: false,
      id: false,
    },
  ],
  gazprombank: [
    {
      producer: "PDFsharp {v} (www.pdfsharp.com)",
      creator: "GPB Online",
      versions: ["1.50.5147", "6.1.1"],
      header: "1.7",
      binary: "\x81\x81\x81\x81",
      objectStreams: false,
      id: false,
    },
  ],
} as const satisfies Record<string, readonly WriterProfile[]>;

/** Programs that re-save a receipt honestly: a phone's share sheet, a desktop viewer's "save as" or print. */
export const RESAVERS: readonly (WriterProfile & { keepsCreationDate: boolean })[] = [
  {
    producer: "iOS Version {v} Quartz PDFContext",
    versions: ["17.4.1 (Build 21E236)", "18.1 (Build 22B83)", "16.7.8 (Build 20H343)"],
    header: "1.3",
    binary: "\xc4\xe5\xf2\xe5",
    objectStreams: false,
    id: true,
    keepsCreationDate: false,
  },
  {
    producer: "macOS Version {v} Quartz PDFContext",
    creator: "Preview",
    versions: ["14.4 (Build 23E214)", "15.1 (Build 24B83)"],
    header: "1.3",
    binary: "\xc4\xe5\xf2\xe5",
    objectStreams: false,
    id: true,
    keepsCreationDate: true,
  },
  {
    producer: "Skia/PDF m{v}",
    creator:
      "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Safari/537.36",
    versions: ["122", "126", "130"],
    header: "1.4",
    binary: "\xd3\xeb\xe9\xe1",
    objectStreams: false,
    id: false,
    keepsCreationDate: false,
  },
  {
    producer: "Microsoft: Print To PDF",
    versions: [""],
    header: "1.7",
    binary: "\xb5\xb5\xb5\xb5",
    objectStreams: false,
    id: false,
    keepsCreationDate: false,
  },
  {
    producer: "GPL Ghostscript {v}",
    versions: ["10.02.1", "9.55.0"],
    header: "1.7",
    binary: "\xc7\xec\x8f\xa2",
    objectStreams: false,
    id: true,
    keepsCreationDate: false,
  },
];

/** Editors and converters a forger saves with. Some are on the old deny-list of names, most are not. */
export const EDITORS: readonly WriterProfile[] = [
  {
    producer: "Adobe Acrobat Pro (64-bit) {v}",
    versions: ["24.1.20643", "23.8.20470"],
    header: "1.6",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: true,
    id: true,
  },
  {
    producer: "PDF Expert {v}",
    versions: ["3.10.6", "2.5.22"],
    header: "1.7",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: false,
    id: true,
  },
  {
    producer: "PDFgear {v}",
    versions: ["2.1.4", "2.1.9"],
    header: "1.7",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: true,
    id: true,
  },
  {
    producer: "Foxit PDF Editor Printer Version {v}",
    versions: ["12.1.2.15332", "13.0.0.21632"],
    header: "1.7",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: false,
    id: true,
  },
  {
    producer: "Xodo PDF {v}",
    versions: ["10.4", "11.0"],
    header: "1.5",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: true,
    id: false,
  },
  {
    producer: "LibreOffice {v}",
    creator: "Draw",
    versions: ["7.6", "24.2"],
    header: "1.6",
    binary: "\xc7\xec\x8f\xa2",
    objectStreams: false,
    id: true,
  },
  {
    producer: "PDFium",
    versions: [""],
    header: "1.7",
    binary: "\xa0\xa0\xa0\xa0",
    objectStreams: false,
    id: false,
  },
  {
    producer: "pdf-lib (https://github.com/Hopding/pdf-lib)",
    versions: [""],
    header: "1.7",
    binary: "\x81\x81\x81\x81",
    objectStreams: true,
    id: false,
  },
  {
    producer: "iLovePDF",
    versions: [""],
    header: "1.7",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: true,
    id: true,
  },
  {
    producer: "Bluebeam Revu x64 {v}",
    versions: ["21.0.50"],
    header: "1.6",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: false,
    id: true,
  },
  {
    producer: "PDF24 Creator {v}",
    versions: ["11.15.2"],
    header: "1.4",
    binary: "\xc7\xec\x8f\xa2",
    objectStreams: false,
    id: true,
  },
  {
    producer: "Icecream PDF Editor {v}",
    versions: ["3.21"],
    header: "1.7",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: false,
    id: false,
  },
  {
    producer: "Master PDF Editor {v}",
    versions: ["5.9.70"],
    header: "1.5",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: true,
    id: true,
  },
  {
    producer: "Canva",
    versions: [""],
    header: "1.4",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: false,
    id: false,
  },
  {
    producer: "PDFsam Visual {v}",
    versions: ["5.2.1"],
    header: "1.7",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: true,
    id: true,
  },
  {
    producer: "Nitro PDF PrimoPDF",
    versions: [""],
    header: "1.4",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: false,
    id: true,
  },
];

/** Editors that only the held-out split uses: no check can have been tuned on their names or files. */
export const HELDOUT_EDITORS: readonly WriterProfile[] = [
  {
    producer: "Sejda PDF Desktop {v}",
    versions: ["7.6.5"],
    header: "1.6",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: true,
    id: true,
  },
  {
    producer: "Wondershare PDFelement {v}",
    versions: ["10.3.4"],
    header: "1.7",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: false,
    id: true,
  },
  {
    producer: "Microsoft® Word для Microsoft 365",
    versions: [""],
    header: "1.7",
    binary: "\xb5\xb5\xb5\xb5",
    objectStreams: true,
    id: true,
  },
  {
    producer: "Okular {v}",
    versions: ["23.08.5"],
    header: "1.5",
    binary: "\xe2\xe3\xcf\xd3",
    objectStreams: false,
    id: false,
  },
];

/** The producer string a profile writes for a version. */
export const producerOf = (w: WriterProfile, version: string) => w.producer.replaceAll("{v}", version).trim();

/**
 * Writes `doc` as `w` would: metadata, object streams, /ID, header version and binary
 * comment (patched in place: the same length keeps every offset true).
 */
export async function writeAs(
  doc: PDFDocument,
  w: WriterProfile,
  meta: { producer: string; creator?: string | undefined; created: Date; modified?: Date | undefined },
): Promise<Uint8Array> {
  doc.setProducer(meta.producer);
  if (meta.creator !== undefined) doc.setCreator(meta.creator);
  doc.setCreationDate(meta.created);
  doc.setModificationDate(meta.modified ?? meta.created);
  if (w.id) {
    const id = createHash("md5").update(meta.producer).update(meta.created.toISOString()).digest("hex");
    doc.context.trailerInfo.ID = doc.context.obj([PDFHexString.of(id), PDFHexString.of(id)]);
  }
  const bytes = Buffer.from(await doc.save({ useObjectStreams: w.objectStreams }));
  bytes.write(`%PDF-${w.header}`, 0, "latin1");
  const eol = bytes.indexOf(0x0a);
  if (bytes[eol + 1] === 0x25) bytes.write(w.binary, eol + 2, "latin1");
  return new Uint8Array(bytes);
}

/** How an appended update is written and how the file ends afterwards. */
export interface UpdateStyle {
  /** Changed dictionaries in an object stream, indexed by a cross-reference stream (PDF 1.5 editors). */
  objectStream?: boolean | undefined;
  /** The earlier `%%EOF` markers blanked out, so counting them finds one save. */
  hideEarlierEof?: boolean | undefined;
  /** The file ends without `%%EOF` (readers tolerate it). */
  noFinalEof?: boolean | undefined;
  /** Bytes after the last `%%EOF`. */
  trailingJunk?: boolean | undefined;
}

/**
 * Replaces the first page's content and resources of `original` by those of `forged`'s
 * first page, appended as an incremental update in `style`: what an editor's "edit text"
 * and save does. Every changed or new object is written again after the original bytes.
 */
export async function replacePageByUpdate(
  original: Uint8Array,
  forged: PDFDocument,
  style: UpdateStyle = {},
  producer?: string,
): Promise<Uint8Array> {
  return appendUpdate(
    original,
    async (doc) => {
      const [copied] = await doc.copyPages(forged, [0]);
      const page = doc.getPage(0);
      if (!copied) return;
      page.node.set(PDFName.of("Contents"), copied.node.get(PDFName.of("Contents")) as PDFObject);
      page.node.set(PDFName.of("Resources"), copied.node.get(PDFName.of("Resources")) as PDFObject);
      if (producer) doc.setProducer(producer);
    },
    style,
  );
}

/** Appends the objects `edit` changes or adds to `original` as an incremental update, in `style`. */
export async function appendUpdate(
  original: Uint8Array,
  edit: (doc: PDFDocument) => Promise<void>,
  style: UpdateStyle = {},
): Promise<Uint8Array> {
  const doc = await PDFDocument.load(original, { updateMetadata: false, throwOnInvalidObject: false });
  const before = new Map(
    doc.context.enumerateIndirectObjects().map(([ref, obj]) => [ref.tag, serialise(obj)]),
  );
  await edit(doc);
  await doc.flush();
  const changed = doc.context
    .enumerateIndirectObjects()
    .filter(([ref, obj]) => {
      const old = before.get(ref.tag);
      return !old || Buffer.compare(old, serialise(obj)) !== 0;
    })
    .sort(([a], [b]) => a.objectNumber - b.objectNumber);
  let base = Buffer.from(original);
  const text = base.toString("latin1");
  const starts = [...text.matchAll(/startxref\s+(\d+)/g)];
  const prev = Number(starts.at(-1)?.[1]);
  if (style.hideEarlierEof) base = Buffer.from(text.replaceAll("%%EOF", "%    "), "latin1");
  const chunks: Buffer[] = [base, Buffer.from("\n")];
  let offset = base.length + 1;
  const entries: { num: number; type: 1 | 2; a: number; b: number }[] = [];
  const inStream: [PDFRef, PDFObject][] = [];
  for (const [ref, obj] of changed) {
    if (style.objectStream && !(obj instanceof PDFStream) && ref.generationNumber === 0) {
      inStream.push([ref, obj]);
      continue;
    }
    const body = Buffer.concat([
      Buffer.from(`${ref.objectNumber} ${ref.generationNumber} obj\n`),
      serialise(obj),
      Buffer.from("\nendobj\n"),
    ]);
    entries.push({ num: ref.objectNumber, type: 1, a: offset, b: ref.generationNumber });
    chunks.push(body);
    offset += body.length;
  }
  const { Root, Info } = doc.context.trailerInfo;
  let size = doc.context.largestObjectNumber + 1;
  if (style.objectStream) {
    const stmNum = size++;
    const xrefNum = size++;
    if (inStream.length > 0) {
      const bodies = inStream.map(([, obj]) => serialise(obj).toString("latin1"));
      let at = 0;
      const header = inStream
        .map(([ref], i) => {
          const s = `${ref.objectNumber} ${at}`;
          at += (bodies[i]?.length ?? 0) + 1;
          return s;
        })
        .join(" ");
      const first = header.length + 1;
      const data = Buffer.from(`${header}\n${bodies.join("\n")}\n`, "latin1");
      const stm = Buffer.concat([
        Buffer.from(
          `${stmNum} 0 obj\n<< /Type /ObjStm /N ${inStream.length} /First ${first} /Length ${data.length} >>\nstream\n`,
        ),
        data,
        Buffer.from("\nendstream\nendobj\n"),
      ]);
      entries.push({ num: stmNum, type: 1, a: offset, b: 0 });
      for (const [i, [ref]] of inStream.entries())
        entries.push({ num: ref.objectNumber, type: 2, a: stmNum, b: i });
      chunks.push(stm);
      offset += stm.length;
    }
    entries.push({ num: xrefNum, type: 1, a: offset, b: 0 });
    entries.sort((x, y) => x.num - y.num);
    const rows = Buffer.concat(
      entries.map((e) => {
        const row = Buffer.alloc(7);
        row[0] = e.type;
        row.writeUInt32BE(e.a, 1);
        row.writeUInt16BE(e.b, 5);
        return row;
      }),
    );
    const index = entries.map((e) => `${e.num} 1`).join(" ");
    chunks.push(
      Buffer.from(
        `${xrefNum} 0 obj\n<< /Type /XRef /Size ${size} /W [1 4 2] /Index [${index}] /Root ${Root} ${Info ? `/Info ${Info} ` : ""}/Prev ${prev} /Length ${rows.length} >>\nstream\n`,
      ),
      rows,
      Buffer.from(`\nendstream\nendobj\nstartxref\n${offset}\n${style.noFinalEof ? "" : "%%EOF\n"}`),
    );
  } else {
    const xref = ["xref\n"];
    for (const e of entries)
      xref.push(`${e.num} 1\n${String(e.a).padStart(10, "0")} ${String(e.b).padStart(5, "0")} n \n`);
    xref.push(
      `trailer\n<< /Size ${size} /Root ${Root} ${Info ? `/Info ${Info} ` : ""}/Prev ${prev} >>\nstartxref\n${offset}\n${style.noFinalEof ? "" : "%%EOF\n"}`,
    );
    chunks.push(Buffer.from(xref.join("")));
  }
  if (style.trailingJunk) chunks.push(Buffer.from("\n\n% saved\n\x00\x00"));
  return new Uint8Array(Buffer.concat(chunks));
}

function serialise(obj: PDFObject): Buffer {
  const buf = Buffer.alloc(obj.sizeInBytes());
  obj.copyBytesInto(buf, 0);
  return buf;
}
