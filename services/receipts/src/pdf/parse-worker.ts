// The worker thread that reads one untrusted PDF. It runs with a memory limit
// (`resourceLimits`) and is terminated by its parent at the time limit, so a hostile
// file can cost at most that much. pdf.js is told never to evaluate code
// (`isEvalSupported: false`), never to load fonts or XFA, and nothing is rendered:
// only metadata and text positions are read.
import { parentPort, workerData } from "node:worker_threads";
import { getDocumentProxy, getMeta } from "unpdf";
import type { ParseRequest, WorkerAnswer } from "./parse.ts";

const { bytes, maxPages } = workerData as ParseRequest;

async function parse(): Promise<WorkerAnswer> {
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
    const { info } = await getMeta(pdf, { parseDates: false });
    const pages: { x: number; y: number; str: string }[][] = [];
    for (let n = 1; n <= pdf.numPages; n++) {
      const page = await pdf.getPage(n);
      const content = await page.getTextContent();
      const items: { x: number; y: number; str: string }[] = [];
      for (const item of content.items) {
        if (!("str" in item) || item.str.trim() === "") continue;
        items.push({ x: item.transform[4] as number, y: item.transform[5] as number, str: item.str });
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
      },
      pages,
    };
  } catch (err) {
    return { kind: "unreadable", detail: describe(err) };
  }
  // No cleanup: the parent terminates this thread, which frees everything pdf.js held.
}

function describe(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.slice(0, 200);
}

parentPort?.postMessage(await parse());
