// Reads one PDF's metadata and positioned text with pdf.js. The service runs this only
// inside a limited worker thread (parse-worker.ts); the scoring command runs it in
// process over its own generated corpus.
import { getDocumentProxy, getMeta } from "unpdf";
import type { TextItem, WorkerAnswer } from "./text-types.ts";

/** pdf.js over `bytes`: metadata and text items, or why the file cannot be read. Never throws. */
export async function readPdfText(bytes: Uint8Array, maxPages: number): Promise<WorkerAnswer> {
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    pdf = await getDocumentProxy(new Uint8Array(bytes), {
      // The pdf.js bundled by unpdf 1.8 no longer has an eval path (its option left the
      // types); passed anyway so an older or swapped pdf.js build cannot compile code
      // from a file's fonts or functions.
      ...({ isEvalSupported: false } as object),
      enableXfa: false,
      disableFontFace: true,
      useSystemFonts: false,
      isOffscreenCanvasSupported: false,
      stopAtErrors: true,
      verbosity: 0,
    });
  } catch (err) {
    return { kind: "unreadable", detail: describe(err) };
  }
  try {
    if (pdf.numPages > maxPages) return { kind: "too_many_pages", pages: pdf.numPages };
    const { info, metadata } = await getMeta(pdf, { parseDates: false });
    const pages: TextItem[][] = [];
    for (let n = 1; n <= pdf.numPages; n++) {
      const page = await pdf.getPage(n);
      const content = await page.getTextContent();
      const items: TextItem[] = [];
      for (const item of content.items) {
        if (!("str" in item) || item.str.trim() === "") continue;
        items.push({
          x: item.transform[4] as number,
          y: item.transform[5] as number,
          str: item.str,
          w: item.width,
        });
      }
      pages.push(items);
    }
    const field = (key: string) => (typeof info[key] === "string" ? (info[key] as string) : undefined);
    return {
      kind: "ok",
      pageCount: pdf.numPages,
      info: {
        producer: field("Producer"),
        creator: field("Creator"),
        creationDate: field("CreationDate"),
        modDate: field("ModDate"),
        xmpTools: xmpTools(metadata),
      },
      pages,
    };
  } catch (err) {
    return { kind: "unreadable", detail: describe(err) };
  } finally {
    await pdf.cleanup().catch(() => undefined);
    await pdf.loadingTask.destroy().catch(() => undefined);
  }
}

/** The XMP packet's writer names: whatever program last wrote the file may have named itself only there. */
function xmpTools(metadata: unknown): string[] | undefined {
  const all = (metadata as { getAll?: () => Record<string, unknown> } | undefined)?.getAll?.();
  if (!all) return undefined;
  const tools = Object.entries(all)
    .filter(([key, value]) => /creatortool|producer|softwareagent/i.test(key) && typeof value === "string")
    .map(([, value]) => value as string);
  return tools.length > 0 ? tools : undefined;
}

function describe(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.slice(0, 200);
}
