// The catalogue of PDF editors (src/review/editors.json): each entry names the program
// its examples come from, and no report engine, library, printer or viewer's save as is
// taken for an editor.
import { describe, expect, it } from "vitest";
import { EDITORS, editorOf } from "./editors.ts";

/** What banks and honest re-saves write: never evidence on their own. */
const NOT_EDITORS: { producer?: string; creator?: string }[] = [
  { producer: "JasperReports Library version 6.20.6", creator: "JasperReports" },
  { producer: "iText® 7.2.5 ©2000-2023 iText Group NV" },
  { producer: "iText 2.1.7 by 1T3XT" },
  { producer: "OpenPDF 1.3.30" },
  { producer: "Apache FOP Version 2.9" },
  { producer: "BIRT Report Engine 4.13" },
  { producer: "FastReport", creator: "FastReport.Net 2023.2" },
  { producer: "Crystal Reports", creator: "Crystal Reports" },
  { producer: "Microsoft Reporting Services PDF Rendering Extension 15.0.0.0" },
  { producer: "PDFKit", creator: "PDFKit" },
  { producer: "pdfmake", creator: "pdfmake" },
  { producer: "jsPDF 4.2.1" },
  {
    producer: "pdf-lib (https://github.com/Hopding/pdf-lib)",
    creator: "pdf-lib (https://github.com/Hopding/pdf-lib)",
  },
  { producer: "ReportLab PDF Library - www.reportlab.com" },
  { producer: "Qt 4.8.7", creator: "wkhtmltopdf 0.12.6" },
  { producer: "Skia/PDF m156", creator: "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/156.0.0.0" },
  { producer: "cairo 1.16.0 (https://cairographics.org)" },
  { producer: "GPL Ghostscript 10.00.0" },
  { producer: "LibreOffice 7.4", creator: "Writer" },
  { producer: "LibreOffice 7.4", creator: "Calc" },
  { producer: "PDFsharp 1.50.5147 (www.pdfsharp.com)" },
  { producer: "Aspose.PDF for .NET 23.1" },
  { producer: "PDFlib+PDI 9.3.1 (Win64)" },
  { producer: "Adobe PDF Library 17.11", creator: "Acrobat PDFMaker 23 for Word" },
  { producer: "Acrobat Distiller 23.0 (Windows)" },
  { producer: "iOS Version 18.1 (Build 22B83) Quartz PDFContext" },
  { producer: "macOS Version 15.1 (Build 24B83) Quartz PDFContext" },
  { producer: "Microsoft: Print To PDF" },
  { producer: "Foxit Reader PDF Printer Version 10.1.0.37527" },
  { producer: "Foxit PDF Editor Printer Version 12.0.0.12394" },
  { producer: "PDF-XChange Core API SDK (9.5.366.0)" },
  { producer: "SAMBox 2.3.4 (www.sejda.org)" },
  { producer: "PDFTron PDFNet, V10.0" },
  { producer: "Apache PDFBox 2.0.29" },
  { producer: "QuestPDF 2024.3.0" },
  { producer: "TCPDF 6.6.2 (http://www.tcpdf.org)" },
  { producer: "mPDF 8.1" },
  { producer: "dompdf 2.0.3 + CPDF" },
  { producer: "WeasyPrint 60.1" },
  { producer: "1С:Предприятие 8.3" },
  { producer: "MuPDF 1.21.1" },
  { producer: "qpdf 11.3.0" },
  { producer: "" },
  {},
];

describe("the catalogue of PDF editors", () => {
  it("has distinct ids, a source and examples for every entry", () => {
    expect(new Set(EDITORS.map((e) => e.id)).size).toBe(EDITORS.length);
    for (const e of EDITORS) {
      expect(e.source.length, e.id).toBeGreaterThan(20);
      expect(e.examples.length, e.id).toBeGreaterThan(0);
    }
  });

  for (const editor of EDITORS)
    it(`names ${editor.name} from what it writes`, () => {
      for (const example of editor.examples) {
        const fields = editor.field === "creator" ? { creator: example } : { producer: example };
        expect(editorOf(fields)?.editor.id, example).toBe(editor.id);
        expect(editorOf({ xmpTools: [example] })?.editor.id, `XMP ${example}`).toBe(editor.id);
      }
    });

  it("takes no report engine, PDF library, printer or viewer for an editor", () => {
    for (const fields of NOT_EDITORS) expect(editorOf(fields), JSON.stringify(fields)).toBeUndefined();
  });
});
