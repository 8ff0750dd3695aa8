// How the corpus's forgeries are made: a genuine receipt of another transfer, edited with
// real PDF tools to show what the payment expected (the values that differ between the
// two sheets are covered and typed over), as a forger would with whatever is at hand.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fontkit from "@pdf-lib/fontkit";
import { PDFDocument, rgb } from "pdf-lib";
import { getDocumentProxy } from "unpdf";
import { normalise } from "../src/layouts/text.ts";
import { FONT_PATH, soffice } from "./writers.ts";

/** A value to replace: where the genuine file shows `from`, the forgery shows `to`. */
export interface Change {
  from: string;
  to: string;
}

/** Where a text run sits on the page (PDF points, baseline). */
interface Spot {
  x: number;
  y: number;
  width: number;
  size: number;
  text: string;
}

/**
 * The runs of the first page that show one of the changed values, with what goes over
 * each. A value may be one run or several on one baseline (writers split text by word or
 * by glyph): consecutive runs whose text joined makes the value count as one.
 */
export async function spotsOf(bytes: Uint8Array, changes: Change[]): Promise<Spot[]> {
  const pdf = await getDocumentProxy(new Uint8Array(bytes));
  const page = await pdf.getPage(1);
  const content = await page.getTextContent();
  const runs = content.items
    .flatMap((item) => ("str" in item && normalise(item.str) !== "" ? [item] : []))
    .map((item) => ({
      x: item.transform[4] as number,
      y: item.transform[5] as number,
      width: item.width,
      size: Math.abs(item.transform[3] as number) || item.height,
      str: normalise(item.str),
    }))
    .sort((a, b) => b.y - a.y || a.x - b.x);
  await pdf.cleanup();
  const out: Spot[] = [];
  const squash = (s: string) => normalise(s).replace(/ /g, "");
  for (let i = 0; i < runs.length; i++) {
    let joined = "";
    for (let j = i; j < runs.length && Math.abs((runs[j]?.y ?? 0) - (runs[i]?.y ?? 0)) < 1; j++) {
      joined += squash(runs[j]?.str ?? "");
      const change = changes.find((c) => squash(c.from) === joined);
      if (change) {
        const first = runs[i] as (typeof runs)[number];
        const last = runs[j] as (typeof runs)[number];
        out.push({
          x: first.x,
          y: first.y,
          width: last.x + last.width - first.x,
          size: first.size,
          text: change.to,
        });
        break;
      }
      if (!changes.some((c) => squash(c.from).startsWith(joined))) break;
    }
  }
  return out;
}

/** What a Latin-only font (Helvetica) can show of a value: currency signs and Cyrillic left out. */
const latin = (s: string) =>
  normalise(s)
    .replace(/[^\x20-\x7e]/g, "")
    .trim();

/** The overlay an editor draws: a white box over the old run, the new text on top. */
function overlayOps(spots: Spot[], font: string, encode: (s: string) => string): string {
  return spots
    .map(
      (s) =>
        `q 1 1 1 rg ${s.x - 1} ${s.y - s.size * 0.3} ${s.width + 2} ${s.size * 1.3} re f Q ` +
        `BT 0 g /${font} ${s.size} Tf ${s.x} ${s.y} Td ${encode(s.text)} Tj ET`,
    )
    .join("\n");
}

const pdfString = (s: string) => `(${latin(s).replace(/[\\()]/g, "\\$&")})`;

/** pdf-lib (as online editors built on it do): white boxes and new text, the whole file written again. */
export async function pdflibOverlay(bytes: Uint8Array, spots: Spot[]): Promise<Uint8Array> {
  const doc = await PDFDocument.load(bytes);
  doc.registerFontkit(fontkit);
  const font = await doc.embedFont(readFileSync(FONT_PATH), { subset: true });
  const page = doc.getPage(0);
  for (const s of spots) {
    page.drawRectangle({
      x: s.x - 1,
      y: s.y - s.size * 0.3,
      width: s.width + 2,
      height: s.size * 1.3,
      color: rgb(1, 1, 1),
    });
    page.drawText(s.text, { x: s.x, y: s.y, size: s.size, font });
  }
  return doc.save();
}

/**
 * MuPDF's incremental save (`mutool run`): the page's content wrapped in q/Q and an
 * overlay stream appended, saved as an update after the original bytes.
 */
export function mupdfIncremental(src: string, out: string, spots: Spot[], tmp: string): void {
  const script = join(tmp, "edit.js");
  writeFileSync(
    script,
    `var doc = new PDFDocument(${JSON.stringify(src)});
var page = doc.findPage(0);
var font = doc.addSimpleFont(new Font("Helvetica"), "Latin");
var res = page.get("Resources");
if (res.isNull()) res = page.get("Parent").get("Resources");
var fonts = res.get("Font");
if (!fonts.isDictionary()) { fonts = doc.newDictionary(); res.put("Font", fonts); }
fonts.put("FXE", font);
var contents = page.get("Contents");
var arr = doc.newArray();
arr.push(doc.addStream("q", {}));
if (contents.isArray()) { for (var i = 0; i < contents.length; i++) arr.push(contents.get(i)); } else arr.push(contents);
arr.push(doc.addStream("Q\\n" + ${JSON.stringify(overlayOps(spots, "FXE", pdfString))}, {}));
page.put("Contents", arr);
doc.save(${JSON.stringify(out)}, "incremental");
`,
  );
  execFileSync("mutool", ["run", script], { stdio: "ignore" });
}

/**
 * A hand edit in qpdf's QDF form: the content stream opened as text, an overlay typed at
 * its end with a Helvetica resource added, `fix-qdf` to repair lengths and offsets, and
 * (when `compact`) qpdf to write a normal file again.
 */
export function qdfEdit(src: string, out: string, spots: Spot[], tmp: string, compact: boolean): void {
  const qdf = join(tmp, "edit.qdf.pdf");
  execFileSync("qpdf", ["--qdf", "--object-streams=disable", src, qdf]);
  let text = readFileSync(qdf, "latin1");
  const font = "/FQ << /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>";
  const pageAt = text.indexOf("%% Page 1\n");
  const pageDict = text.slice(pageAt, text.indexOf("endobj", pageAt));
  const resRef = /\/Resources (\d+) 0 R/.exec(pageDict);
  const resAt = resRef ? text.indexOf(`\n${resRef[1]} 0 obj`) : pageAt + pageDict.indexOf("/Resources");
  const resEnd = text.indexOf("endobj", resAt);
  const res = text.slice(resAt, resEnd);
  const fontRef = /\/Font (\d+) 0 R/.exec(res);
  if (fontRef) {
    const at = text.indexOf("<<", text.indexOf(`\n${fontRef[1]} 0 obj`)) + 2;
    text = `${text.slice(0, at)}\n  ${font}${text.slice(at)}`;
  } else if (/\/Font\s*<</.test(res)) {
    const at = resAt + (/\/Font\s*<</.exec(res)?.index ?? 0) + (/\/Font\s*<</.exec(res)?.[0].length ?? 0);
    text = `${text.slice(0, at)}\n  ${font}${text.slice(at)}`;
  } else {
    const at = text.indexOf("<<", resRef ? resAt : resAt) + 2;
    text = `${text.slice(0, at)}\n  /Font << ${font} >>${text.slice(at)}`;
  }
  // Every content stream of page 1: the first gets "q", the last "Q" and the overlay.
  const marks = [...text.matchAll(/%% Contents for page 1\n/g)].map((m) => m.index ?? 0);
  const streamStart = (mark: number) => text.indexOf("stream\n", mark) + "stream\n".length;
  const last = marks.at(-1) ?? 0;
  const end = text.indexOf("\nendstream", streamStart(last));
  text = `${text.slice(0, end)}\nQ\n${overlayOps(spots, "FQ", pdfString)}${text.slice(end)}`;
  const first = streamStart(marks[0] ?? 0);
  text = `${text.slice(0, first)}q\n${text.slice(first)}`;
  writeFileSync(qdf, text, "latin1");
  const fixed = execFileSync("fix-qdf", [qdf]);
  if (!compact) writeFileSync(out, fixed);
  else {
    writeFileSync(join(tmp, "fixed.pdf"), fixed);
    execFileSync("qpdf", [join(tmp, "fixed.pdf"), out]);
  }
}

/**
 * The LibreOffice Draw round trip: the PDF imported into Draw, the changed texts retyped
 * in the drawing (its content.xml), and exported to PDF again. Undefined when Draw split
 * a value so that none of it could be retyped.
 */
export function drawRoundTrip(src: string, changes: Change[], tmp: string): Uint8Array | undefined {
  soffice(tmp, ["--infilter=draw_pdf_import"], "odg", [src]);
  const base = src.replace(/^.*\//, "").replace(/\.pdf$/, "");
  const odg = join(tmp, `${base}.odg`);
  const dir = join(tmp, "odg");
  execFileSync("rm", ["-rf", dir]);
  execFileSync("unzip", ["-q", "-o", odg, "-d", dir]);
  const file = join(dir, "content.xml");
  let xml = readFileSync(file, "utf8");
  let replaced = 0;
  for (const c of changes)
    for (const variant of [c.from, c.from.replace(/\u00a0/g, " ")]) {
      const parts = xml.split(`>${variant}<`);
      if (parts.length > 1) {
        replaced += parts.length - 1;
        xml = parts.join(`>${c.to}<`);
      }
    }
  if (replaced === 0) return undefined;
  writeFileSync(file, xml);
  execFileSync("rm", ["-f", odg]);
  execFileSync("zip", ["-q", "-X", "-0", odg, "mimetype"], { cwd: dir });
  execFileSync("zip", ["-q", "-X", "-r", odg, ".", "-x", "mimetype"], { cwd: dir });
  soffice(tmp, [], "pdf:draw_pdf_Export", [odg]);
  return readFileSync(join(tmp, `${base}.pdf`));
}
