import { type Revisions, readRevisions } from "./revisions.ts";
import { readUpdates, type Updates } from "./updates.ts";

/**
 * What the raw bytes of a PDF say before any parser runs: how many times it was saved
 * (each save appends a `%%EOF`), how many objects it declares, and whether it carries
 * active content. Counting is a byte scan bounded by the file size limit.
 */
export interface PdfStructure {
  isPdf: boolean;
  /** Count of `%%EOF` markers: 1 for a file written once, more after incremental updates. */
  eofMarkers: number;
  /** A linearized ("fast web view") file legitimately ends its first part with a `%%EOF` too. */
  linearized: boolean;
  /** Count of `N G obj` headers: a bound on what the parser will be asked to build. */
  objects: number;
  /** Names of active-content keys found (/JavaScript, /JS, /Launch, /EmbeddedFile, /RichMedia). */
  activeContent: string[];
  encrypted: boolean;
  /** Saves, sections and the writer's traits, from the cross-reference structure (revisions.ts). */
  revisions: Revisions;
  /** What the revisions after the first save changed (updates.ts). */
  updates: Updates;
}

const ACTIVE = ["/JavaScript", "/JS", "/Launch", "/EmbeddedFile", "/RichMedia", "/SubmitForm"] as const;

/** Scans a file's bytes; never throws. */
export function scanStructure(bytes: Uint8Array): PdfStructure {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // A PDF header may sit after up to 1 KiB of junk (the spec tolerates it, readers do too).
  const head = buf.subarray(0, 1024).toString("latin1");
  const isPdf = head.includes("%PDF-");
  const text = buf.toString("latin1");
  const eofMarkers = countMatches(text, /%%EOF/g);
  const objects = countMatches(text, /\b\d{1,10}\s+\d{1,5}\s+obj\b/g);
  const activeContent = ACTIVE.filter((key) => new RegExp(`${escapeRegExp(key)}(?![A-Za-z])`).test(text));
  const revisions = readRevisions(bytes);
  // The first save ends where the oldest cross-reference section does, or at its %%EOF
  // (a linearized file's first part ends with one too, so there it is the second).
  const eofs = [...text.matchAll(/%%EOF/g)].map((m) => m.index ?? 0);
  const byEof = eofs.length > 1 ? (eofs[revisions.linearized ? 1 : 0] ?? -1) : -1;
  const firstSaveEnd = revisions.linearized
    ? byEof
    : revisions.firstSaveEnd >= 0
      ? revisions.firstSaveEnd
      : byEof;
  return {
    isPdf,
    eofMarkers,
    linearized: /\/Linearized\b/.test(head),
    objects,
    activeContent,
    encrypted: /\/Encrypt\b/.test(text),
    revisions,
    updates: readUpdates(text, firstSaveEnd, [...revisions.redefined, ...revisions.overriddenByStream]),
  };
}

function countMatches(text: string, re: RegExp): number {
  let n = 0;
  for (const _ of text.matchAll(re)) n++;
  return n;
}

const escapeRegExp = (s: string) => s.replace(/[/\\^$*+?.()|[\]{}]/g, "\\$&");
