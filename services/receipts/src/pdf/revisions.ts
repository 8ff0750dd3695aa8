import { inflateSync } from "node:zlib";

/**
 * How a PDF was written and how often, read from its own cross-reference structure
 * rather than from markers a forger can blank out: the chain of cross-reference sections
 * (tables and streams, followed from the last `startxref` through `/Prev`), every object
 * definition in the body, and the object numbers inside object streams.
 */
export interface Revisions {
  /** Cross-reference sections reached from the last `startxref` (0 when the chain cannot be followed). */
  sections: number;
  /** `startxref` keywords anywhere in the file: each save writes one. */
  startxrefs: number;
  /** `%%EOF` markers (the old count; kept as one signal among several). */
  eofMarkers: number;
  /** Object numbers defined more than once (in the body or in object streams): objects written again. */
  redefined: number[];
  /** Object numbers inside object streams that are also defined elsewhere: an object stream overriding them. */
  overriddenByStream: number[];
  /** Objects with a generation above 0: freed and reused by a later writer. */
  reusedGenerations: number;
  /** A genuine linearized file: its first object says /Linearized with /L equal to the file's length. */
  linearized: boolean;
  /** What the writer left in the file: header version, binary comment, cross-reference kind, object streams, /ID. */
  signature: WriterSignature;
  /** Where the first save ends (after the oldest section's `startxref`), or -1 with a single section. */
  firstSaveEnd: number;
}

/** The structural traits of the program that wrote a file (see `signatureKey`). */
export interface WriterSignature {
  version: string;
  /** The binary comment's bytes as hex, "" when there is none. */
  binary: string;
  xref: "table" | "stream" | "none";
  objectStreams: boolean;
  id: boolean;
}

/** A signature as one comparable string. */
export const signatureKey = (s: WriterSignature) =>
  `pdf ${s.version}, comment ${s.binary || "none"}, xref ${s.xref}, ${s.objectStreams ? "object streams" : "no object streams"}, ${s.id ? "/ID" : "no /ID"}`;

/** At most this many sections are followed: a loop of /Prev pointers ends here. */
const MAX_SECTIONS = 64;
/** An object stream is inflated to at most this much (the file size limit bounds the input). */
const MAX_INFLATE = 4 * 1024 * 1024;

/** Reads the revisions of a file's bytes; never throws. */
export function readRevisions(bytes: Uint8Array): Revisions {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const text = buf.toString("latin1");
  const definitions = new Map<number, number>();
  let reusedGenerations = 0;
  for (const m of text.matchAll(/(?<![\d.])(\d{1,10})\s+(\d{1,5})\s+obj\b/g)) {
    const num = Number(m[1]);
    definitions.set(num, (definitions.get(num) ?? 0) + 1);
    if (Number(m[2]) > 0) reusedGenerations++;
  }
  const inStreams = new Map<number, number>();
  let objectStreams = false;
  for (const stm of objectStreamsOf(buf, text)) {
    objectStreams = true;
    for (const num of stm) inStreams.set(num, (inStreams.get(num) ?? 0) + 1);
  }
  const redefined = [...definitions].filter(([, n]) => n > 1).map(([num]) => num);
  for (const [num, n] of inStreams) if (n > 1 && !redefined.includes(num)) redefined.push(num);
  const overriddenByStream = [...inStreams.keys()].filter((num) => definitions.has(num));
  const chain = followChain(text);
  const head = text.slice(0, 1024);
  const lin = /\/Linearized\b[^>]*?\/L\s+(\d+)/.exec(head);
  const binary = /^%PDF-\d\.\d\s*[\r\n]+%([^\r\n]{1,8})/.exec(text)?.[1] ?? "";
  return {
    sections: chain.sections,
    startxrefs: count(text, /\bstartxref\b/g),
    eofMarkers: count(text, /%%EOF/g),
    redefined: redefined.sort((a, b) => a - b),
    overriddenByStream: overriddenByStream.sort((a, b) => a - b),
    reusedGenerations,
    linearized: lin !== null && Number(lin[1]) === bytes.length,
    firstSaveEnd: chain.sections > 1 ? chain.oldestEnd : -1,
    signature: {
      version: /^%PDF-(\d\.\d)/.exec(text)?.[1] ?? "?",
      binary: [...binary].every((c) => c.charCodeAt(0) >= 0x80)
        ? Buffer.from(binary, "latin1").toString("hex")
        : "",
      xref: chain.firstKind,
      objectStreams,
      id: /\/ID\s*\[/.test(chain.trailers.join("\n")),
    },
  };
}

/**
 * How many times a file was saved, by its structure: the most of its cross-reference
 * sections, `startxref` keywords and `%%EOF` markers (one each per save; a linearized
 * file has two of each for one save), and one more when objects were written twice.
 */
export function savesOf(r: Revisions): number {
  const perSave = r.linearized ? 2 : 1;
  const counted = Math.max(r.sections, r.startxrefs, r.eofMarkers) / perSave;
  const bySave = Math.max(1, Math.ceil(counted));
  return r.redefined.length > 0 || r.overriddenByStream.length > 0 ? Math.max(2, bySave) : bySave;
}

/** What an operator reads about a file saved more than once. */
export function describeRevisions(r: Revisions): string {
  const parts = [`saved ${savesOf(r)} times`];
  if (r.sections > 1) parts.push(`${r.sections} cross-reference sections`);
  if (r.redefined.length > 0) parts.push(`objects ${list(r.redefined)} written again`);
  if (r.overriddenByStream.length > 0)
    parts.push(`objects ${list(r.overriddenByStream)} overridden from an object stream`);
  if (r.eofMarkers < savesOf(r)) parts.push(`${r.eofMarkers} %%EOF marker(s) left`);
  return parts.join(", ");
}

const list = (nums: number[]) => (nums.length > 6 ? `${nums.slice(0, 6).join(", ")}, …` : nums.join(", "));

function count(text: string, re: RegExp): number {
  let n = 0;
  for (const _ of text.matchAll(re)) n++;
  return n;
}

/** Follows `startxref` → section → `/Prev` …; counts the sections and keeps their trailers. */
function followChain(text: string): {
  sections: number;
  firstKind: WriterSignature["xref"];
  trailers: string[];
  oldestEnd: number;
} {
  const starts = [...text.matchAll(/\bstartxref\s+(\d+)/g)];
  let at = Number(starts.at(-1)?.[1] ?? Number.NaN);
  const seen = new Set<number>();
  const trailers: string[] = [];
  let kind: WriterSignature["xref"] = "none";
  let sections = 0;
  let oldest = -1;
  while (Number.isFinite(at) && at >= 0 && at < text.length && !seen.has(at) && seen.size < MAX_SECTIONS) {
    seen.add(at);
    // Writers and readers tolerate a few bytes of slack around the offset.
    const window = text.slice(Math.max(0, at - 4), at + 64);
    let dict: string | undefined;
    if (/^\s*xref\b/.test(text.slice(at, at + 16)) || /\bxref\s/.test(window.slice(0, 12))) {
      const trailerAt = text.indexOf("trailer", at);
      if (trailerAt < 0) break;
      dict = dictAt(text, text.indexOf("<<", trailerAt));
      kind = "table";
    } else {
      const obj = /^\s*\d+\s+\d+\s+obj\s*/.exec(text.slice(at, at + 32));
      if (!obj) break;
      dict = dictAt(text, at + obj[0].length);
      if (!dict || !/\/Type\s*\/XRef\b/.test(dict)) break;
      kind = "stream";
    }
    if (!dict) break;
    sections++;
    oldest = at;
    trailers.push(dict);
    const stm = /\/XRefStm\s+(\d+)/.exec(dict);
    if (stm) seen.add(Number(stm[1]));
    at = Number(/\/Prev\s+(\d+)/.exec(dict)?.[1] ?? Number.NaN);
  }
  // The writer's traits are those of the first (oldest) section.
  const end = oldest >= 0 ? text.indexOf("startxref", oldest) : -1;
  return { sections, firstKind: kind, trailers, oldestEnd: end };
}

/** The dictionary starting at `at` ("<< … >>", nesting followed), or undefined. */
function dictAt(text: string, at: number): string | undefined {
  if (at < 0 || text.slice(at, at + 2) !== "<<") return undefined;
  let depth = 0;
  for (let i = at; i < Math.min(text.length, at + 65_536); i++) {
    if (text[i] === "<" && text[i + 1] === "<") {
      depth++;
      i++;
    } else if (text[i] === ">" && text[i + 1] === ">") {
      depth--;
      i++;
      if (depth === 0) return text.slice(at, i + 1);
    }
  }
  return undefined;
}

/** The object numbers each object stream of the file holds. */
function* objectStreamsOf(buf: Buffer, text: string): Generator<number[]> {
  for (const m of text.matchAll(/\/Type\s*\/ObjStm\b/g)) {
    const open = text.lastIndexOf("<<", m.index);
    const dict = dictAt(text, open);
    if (!dict) continue;
    const n = Number(/\/N\s+(\d+)/.exec(dict)?.[1]);
    const first = Number(/\/First\s+(\d+)/.exec(dict)?.[1]);
    const length = Number(/\/Length\s+(\d+)(?!\s+\d+\s+R)/.exec(dict)?.[1]);
    const streamAt = text.indexOf("stream", open + dict.length);
    if (!(n > 0) || !(first > 0) || streamAt < 0) continue;
    let start = streamAt + "stream".length;
    if (text[start] === "\r") start++;
    if (text[start] === "\n") start++;
    const end = Number.isFinite(length) ? start + length : text.indexOf("endstream", start);
    let data = buf.subarray(start, end);
    if (/\/FlateDecode/.test(dict)) {
      try {
        data = inflateSync(data, { maxOutputLength: MAX_INFLATE });
      } catch {
        continue;
      }
    } else if (/\/Filter/.test(dict)) continue;
    const header = data.subarray(0, first).toString("latin1").trim().split(/\s+/).map(Number);
    const nums: number[] = [];
    for (let i = 0; i + 1 < header.length && nums.length < n; i += 2) nums.push(header[i] as number);
    yield nums;
  }
}
