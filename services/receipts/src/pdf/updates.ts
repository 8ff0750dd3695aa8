/**
 * What the later revisions of a file changed: the objects written after the first save
 * (after its first `%%EOF`, or the last definitions of objects defined twice), sorted by
 * what they are. A signature or a metadata update is not an edit of the receipt; new or
 * rewritten page content, pages, fonts, images or annotations are.
 */
export interface Updates {
  /** Objects of later revisions that draw on a page or change what a page shows. */
  content: string[];
  /** The later revisions sign the file (a /Sig dictionary with a /ByteRange). */
  signed: boolean;
  /** Objects of later revisions that only describe the file (Info, XMP, catalog, form). */
  other: number;
}

const OBJ = /(?<![\d.])(\d{1,10})\s+(\d{1,5})\s+obj\b/g;

/** Sorts the objects written by later revisions. `firstSaveEnd` is where the first save ends. */
export function readUpdates(text: string, firstSaveEnd: number, redefined: readonly number[]): Updates {
  const last = new Map<number, number>();
  const first = new Map<number, number>();
  for (const m of text.matchAll(OBJ)) {
    const num = Number(m[1]);
    if (!first.has(num)) first.set(num, m.index ?? 0);
    last.set(num, m.index ?? 0);
  }
  const later = new Map<number, number>();
  for (const [num, at] of last)
    if ((firstSaveEnd >= 0 && at > firstSaveEnd) || (redefined.includes(num) && at !== first.get(num)))
      later.set(num, at);
  const out: Updates = { content: [], signed: false, other: 0 };
  const plainStreams: [number, string][] = [];
  const pageContents = new Set<number>();
  for (const [num, at] of later) {
    const end = text.indexOf("endobj", at);
    const head = text.slice(at, end > 0 ? Math.min(end, at + 2000) : at + 2000);
    const dict = head.split(/\bstream\b/)[0] ?? head;
    const isStream = /\bstream\b/.test(head);
    if (/\/Type\s*\/Sig\b/.test(dict) || /\/ByteRange\s*\[/.test(dict)) out.signed = true;
    const kind = contentKind(dict, isStream);
    if (kind === "a page")
      for (const ref of (/\/Contents\s*(\[[^\]]*\]|\d+\s+\d+\s+R)/.exec(dict)?.[1] ?? "").matchAll(
        /(\d+)\s+\d+\s+R/g,
      ))
        pageContents.add(Number(ref[1]));
    if (kind === "stream") plainStreams.push([num, `object ${num} (a content stream)`]);
    else if (kind) out.content.push(`object ${num} (${kind})`);
    else out.other++;
  }
  // A signature's appearance is a form with fonts on a widget, and signing adds the widget
  // to the page: only a page's own content, new or rewritten, counts then.
  if (out.signed)
    out.content = plainStreams
      .filter(([num]) => pageContents.has(num) || (first.get(num) ?? Infinity) < firstSaveEnd)
      .map(([, what]) => what);
  else out.content.push(...plainStreams.map(([, what]) => what));
  return out;
}

/** What a later object is, when it changes what a page shows. */
function contentKind(dict: string, isStream: boolean): string | undefined {
  if (/\/Type\s*\/Page\b/.test(dict)) return "a page";
  if (/\/Type\s*\/ObjStm\b/.test(dict)) return "an object stream";
  if (/\/Type\s*\/(XRef|Metadata|EmbeddedFile)\b/.test(dict) || /\/Subtype\s*\/XML\b/.test(dict))
    return undefined;
  if (/\/Subtype\s*\/(Form|Image)\b/.test(dict)) return "an image or form drawn on the page";
  if (/\/Type\s*\/Font\b|\/FontFile|\/Type\s*\/FontDescriptor/.test(dict)) return "a font";
  if (/\/Subtype\s*\/(FreeText|Stamp|Square|Ink|Text|Line|Polygon|Redact|Caret|Highlight)\b/.test(dict))
    return "an annotation drawn on the page";
  if (isStream) return "stream";
  return undefined;
}
