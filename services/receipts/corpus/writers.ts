// The programs that write the corpus's receipts. None of them is this project's: each
// gets the receipt's text (a bank's sheet, @gw/testkit/receipts) and writes
// the PDF as it always does, with its own producer, structure and font handling.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Row, Sheet } from "@gw/testkit/receipts";
import fontkit from "@pdf-lib/fontkit";
import { jsPDF } from "jspdf";
import { PDFDocument, rgb } from "pdf-lib";
import PDFKit from "pdfkit";
import pdfmake from "pdfmake";
import { type Browser, chromium } from "playwright-core";

const require = createRequire(import.meta.url);
export const FONT_PATH = require.resolve("dejavu-fonts-ttf/ttf/DejaVuSans.ttf");
export const BOLD_PATH = require.resolve("dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf");
const FONT = readFileSync(FONT_PATH);
const BOLD = readFileSync(BOLD_PATH);

export const PAGE = { width: 420, height: 640 };

/** One piece of text at a place (points, baseline, origin top-left). */
interface Placed {
  text: string;
  x: number;
  y: number;
  size: number;
  bold: boolean;
  grey: boolean;
}

const flat = (s: string) => s.replace(/\n/g, " ");

/** Where a sheet's text goes on the page: title, label/value rows, footer. */
function place(sheet: Sheet): Placed[] {
  const out: Placed[] = [];
  let y = 48;
  const put = (row: Row, size: number, bold: boolean) => {
    if (typeof row === "string") out.push({ text: flat(row), x: 32, y, size, bold, grey: false });
    else {
      out.push({ text: flat(row[0]), x: 32, y, size, bold, grey: true });
      out.push({ text: flat(row[1]), x: 210, y, size, bold, grey: false });
    }
  };
  sheet.title.forEach((row, i) => {
    put(row, i === 0 ? 18 : 12, i === 0);
    y += i === 0 ? 28 : 20;
  });
  y += 10;
  for (const row of sheet.rows) {
    put(row, 10, false);
    y += 22;
  }
  y += 20;
  for (const line of sheet.footer) {
    out.push({ text: line, x: 32, y, size: 7, bold: false, grey: true });
    y += 12;
  }
  return out;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** A two-column table as wide as the page (LibreOffice squeezes a table without widths). */
const table = (rows: string[]) =>
  `<table width="100%" cellpadding="2"><colgroup><col width="190"><col width="300"></colgroup>${rows.join("")}</table>`;

/** The sheet as an HTML page (Chromium and LibreOffice lay it out themselves). */
export function html(sheet: Sheet): string {
  const row = (r: Row) =>
    typeof r === "string"
      ? `<tr><td colspan="2">${esc(flat(r))}</td></tr>`
      : `<tr><td class="l">${esc(flat(r[0]))}</td><td>${esc(flat(r[1]))}</td></tr>`;
  const [brand, ...title] = sheet.title;
  return `<!doctype html><html><head><meta charset="utf-8"><title>Квитанция</title><style>
body{font-family:"DejaVu Sans",sans-serif;font-size:10pt;margin:24pt}
h1{font-size:18pt;margin:0 0 8pt} td{padding:3pt 8pt 3pt 0} .l{color:#777} footer{font-size:7pt;color:#888;margin-top:16pt}
</style></head><body><h1>${esc(typeof brand === "string" ? brand : (brand ?? []).join(" "))}</h1>
${table(title.map(row))}<hr>${table(sheet.rows.map(row))}
<footer>${sheet.footer.map((l) => `<p>${esc(l)}</p>`).join("")}</footer></body></html>`;
}

/** The sheet as SVG text (cairo draws it). */
function svg(sheet: Sheet): string {
  const texts = place(sheet).map(
    (p) =>
      `<text x="${p.x}" y="${p.y}" font-size="${p.size}" font-weight="${p.bold ? "bold" : "normal"}" fill="${p.grey ? "#777" : "#000"}">${esc(p.text)}</text>`,
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${PAGE.width}pt" height="${PAGE.height}pt" viewBox="0 0 ${PAGE.width} ${PAGE.height}" font-family="DejaVu Sans"><rect width="100%" height="100%" fill="#fff"/>${texts.join("")}</svg>`;
}

async function pdfkit(sheet: Sheet): Promise<Uint8Array> {
  const doc = new PDFKit({ size: [PAGE.width, PAGE.height], margin: 0, info: { Title: "Квитанция" } });
  const chunks: Buffer[] = [];
  doc.on("data", (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve) => doc.on("end", () => resolve()));
  for (const p of place(sheet))
    doc
      .font(p.bold ? BOLD_PATH : FONT_PATH)
      .fontSize(p.size)
      .fillColor(p.grey ? "#777777" : "#000000")
      .text(p.text, p.x, p.y - p.size * 0.93, { lineBreak: false });
  doc.end();
  await done;
  return Buffer.concat(chunks);
}

async function pdflib(sheet: Sheet): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.registerFontkit(fontkit);
  const font = await doc.embedFont(FONT, { subset: true });
  const bold = await doc.embedFont(BOLD, { subset: true });
  const page = doc.addPage([PAGE.width, PAGE.height]);
  for (const p of place(sheet))
    page.drawText(p.text, {
      x: p.x,
      y: PAGE.height - p.y,
      size: p.size,
      font: p.bold ? bold : font,
      color: p.grey ? rgb(0.45, 0.45, 0.45) : rgb(0, 0, 0),
    });
  doc.setTitle("Квитанция");
  return doc.save();
}

async function jspdf(sheet: Sheet): Promise<Uint8Array> {
  const doc = new jsPDF({ unit: "pt", format: [PAGE.width, PAGE.height], compress: true });
  doc.addFileToVFS("DejaVuSans.ttf", FONT.toString("base64"));
  doc.addFont("DejaVuSans.ttf", "DejaVu", "normal");
  doc.addFileToVFS("DejaVuSans-Bold.ttf", BOLD.toString("base64"));
  doc.addFont("DejaVuSans-Bold.ttf", "DejaVu", "bold");
  for (const p of place(sheet)) {
    doc.setFont("DejaVu", p.bold ? "bold" : "normal");
    doc.setFontSize(p.size);
    doc.setTextColor(p.grey ? 119 : 0);
    doc.text(p.text, p.x, p.y);
  }
  doc.setProperties({ title: "Квитанция" });
  return new Uint8Array(doc.output("arraybuffer"));
}

async function pdfmakeWriter(sheet: Sheet): Promise<Uint8Array> {
  pdfmake.setFonts({ DejaVu: { normal: FONT_PATH, bold: BOLD_PATH } });
  pdfmake.setUrlAccessPolicy(() => false);
  const content = place(sheet).map((p) => ({
    text: p.text,
    absolutePosition: { x: p.x, y: p.y - p.size },
    fontSize: p.size,
    bold: p.bold,
    color: p.grey ? "#777777" : "#000000",
  }));
  const doc = pdfmake.createPdf({
    pageSize: { width: PAGE.width, height: PAGE.height },
    pageMargins: 0,
    info: { title: "Квитанция" },
    defaultStyle: { font: "DejaVu" },
    content,
  });
  return new Uint8Array(await doc.getBuffer());
}

let browser: Browser | undefined;

async function chromiumPrint(sheet: Sheet): Promise<Uint8Array> {
  browser ??= await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  const page = await browser.newPage();
  await page.setContent(html(sheet));
  const pdf = await page.pdf({
    width: `${(PAGE.width * 4) / 3}px`,
    height: `${(PAGE.height * 4) / 3}px`,
    printBackground: true,
  });
  await page.close();
  return pdf;
}

export async function closeBrowser(): Promise<void> {
  await browser?.close();
  browser = undefined;
}

/** LibreOffice Writer's export of the receipt as an HTML document opened in Writer. */
function libreoffice(sheet: Sheet, tmp: string): Uint8Array {
  const src = join(tmp, "receipt.html");
  writeFileSync(src, html(sheet));
  soffice(tmp, ["--infilter=HTML (StarWriter)"], "pdf:writer_pdf_Export", [src]);
  return readFileSync(join(tmp, "receipt.pdf"));
}

/** Runs LibreOffice headless with a profile of its own (parallel builds do not share one). */
export function soffice(tmp: string, options: string[], convertTo: string, files: string[]): void {
  execFileSync(
    "soffice",
    [
      `-env:UserInstallation=file://${tmp}/lo-profile`,
      "--headless",
      ...options,
      "--convert-to",
      convertTo,
      "--outdir",
      tmp,
      ...files,
    ],
    { stdio: "ignore", timeout: 120_000 },
  );
}

/** wkhtmltopdf (Qt WebKit), an HTML-to-PDF engine banks' back ends use. */
function wkhtmltopdf(sheet: Sheet, tmp: string): Uint8Array {
  const src = join(tmp, "receipt.html");
  writeFileSync(src, html(sheet));
  execFileSync(
    "wkhtmltopdf",
    ["-q", "--page-width", "148mm", "--page-height", "226mm", src, join(tmp, "wk.pdf")],
    {
      stdio: "ignore",
    },
  );
  return readFileSync(join(tmp, "wk.pdf"));
}

function cairo(sheet: Sheet, tmp: string): Uint8Array {
  const src = join(tmp, "receipt.svg");
  writeFileSync(src, svg(sheet));
  return execFileSync("rsvg-convert", ["-f", "pdf", src]);
}

/** ReportLab (Debian's python3-reportlab), a report library banks use. */
function reportlab(sheet: Sheet, tmp: string): Uint8Array {
  writeFileSync(join(tmp, "placed.json"), JSON.stringify(place(sheet)));
  const script = new URL("./rl_writer.py", import.meta.url).pathname;
  execFileSync("/usr/bin/python3", [script, join(tmp, "placed.json"), join(tmp, "rl.pdf")]);
  return readFileSync(join(tmp, "rl.pdf"));
}

/** WeasyPrint (Debian's `weasyprint`), an HTML/CSS-to-PDF engine of Python back ends. */
function weasyprint(sheet: Sheet, tmp: string): Uint8Array {
  const src = join(tmp, "receipt.html");
  writeFileSync(src, html(sheet));
  execFileSync("/usr/bin/weasyprint", ["-q", src, join(tmp, "wp.pdf")], { stdio: "ignore" });
  return readFileSync(join(tmp, "wp.pdf"));
}

/** FPDF (Debian's php-fpdf 1.84), the PHP library; its fonts made once per build with its makefont. */
function fpdf(sheet: Sheet, tmp: string): Uint8Array {
  const fonts = join(tmp, "fpdf-fonts");
  if (!existsSync(join(fonts, "DejaVuSans.php"))) {
    mkdirSync(fonts, { recursive: true });
    const make = new URL("./fpdf_font.php", import.meta.url).pathname;
    for (const font of [FONT_PATH, BOLD_PATH])
      execFileSync("php", [make, font], { cwd: fonts, stdio: "ignore" });
  }
  writeFileSync(join(tmp, "placed.json"), JSON.stringify(place(sheet)));
  const script = new URL("./fpdf_writer.php", import.meta.url).pathname;
  execFileSync("php", [script, join(tmp, "placed.json"), join(tmp, "fpdf.pdf"), fonts]);
  return readFileSync(join(tmp, "fpdf.pdf"));
}

export const WRITERS = {
  pdfkit,
  "pdf-lib": pdflib,
  jspdf,
  pdfmake: pdfmakeWriter,
  chromium: chromiumPrint,
  libreoffice,
  cairo,
  reportlab,
  wkhtmltopdf,
  weasyprint,
  fpdf,
} satisfies Record<string, (sheet: Sheet, tmp: string) => Promise<Uint8Array> | Uint8Array>;
export type WriterName = keyof typeof WRITERS;

/** Programs that re-save a receipt as a new file (a phone's or desktop's "save as", a compressor). */
export const RESAVERS = {
  qpdf: (src: string, out: string) => execFileSync("qpdf", [src, out]),
  "mutool-clean": (src: string, out: string) => execFileSync("mutool", ["clean", "-gg", src, out]),
  ghostscript: (src: string, out: string) =>
    execFileSync("gs", ["-q", "-dNOPAUSE", "-dBATCH", "-sDEVICE=pdfwrite", `-sOutputFile=${out}`, src]),
} satisfies Record<string, (src: string, out: string) => unknown>;
export type ResaverName = keyof typeof RESAVERS;
