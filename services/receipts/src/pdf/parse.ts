import { Worker } from "node:worker_threads";
import { type PdfStructure, scanStructure } from "./structure.ts";
import type { PdfInfo, TextItem, WorkerAnswer } from "./text-types.ts";

/** Bounds on reading one untrusted file. */
export interface ParseLimits {
  maxBytes: number;
  maxPages: number;
  maxObjects: number;
  timeoutMs: number;
  /** Old-generation heap of the worker; young generation and code space are fixed small. */
  memoryMb: number;
}

export const DEFAULT_PARSE_LIMITS: ParseLimits = {
  maxBytes: 5 * 1024 * 1024,
  maxPages: 5,
  maxObjects: 5000,
  timeoutMs: 5000,
  memoryMb: 128,
};

/** What the worker is given. */
export interface ParseRequest {
  bytes: Uint8Array;
  maxPages: number;
}

export type { PdfInfo, TextItem, WorkerAnswer } from "./text-types.ts";

/** The result of reading one file, every failure named. */
export type ParseOutcome =
  | { kind: "ok"; structure: PdfStructure; pageCount: number; info: PdfInfo; pages: TextItem[][] }
  | {
      kind: "failed";
      check:
        | "not_pdf"
        | "file_too_large"
        | "pdf_unreadable"
        | "parse_timeout"
        | "parse_memory"
        | "parse_capacity"
        | "too_many_pages"
        | "too_many_objects";
      detail: string;
      structure?: PdfStructure;
    };

/**
 * Reads a PDF's structure, metadata and text in a worker thread with hard limits: the
 * size is checked before anything, the object count by a byte scan before the parser
 * runs, and the parser itself gets `timeoutMs` of wall time and `memoryMb` of heap.
 * Never throws: every way a hostile file can fail ends in a named outcome.
 */
export class PdfReader {
  readonly #limits: ParseLimits;
  readonly #slots: Semaphore;

  /** `concurrency` parses run at once; up to `queue` more wait; beyond that a file is not read now. */
  constructor(limits: ParseLimits = DEFAULT_PARSE_LIMITS, concurrency = 2, queue = 32) {
    this.#limits = limits;
    this.#slots = new Semaphore(concurrency, queue);
  }

  get limits(): ParseLimits {
    return this.#limits;
  }

  async read(bytes: Uint8Array): Promise<ParseOutcome> {
    const limits = this.#limits;
    const checked = preflight(bytes, limits);
    if ("kind" in checked) return checked;
    const slot = this.#slots.tryAcquire();
    if (!slot)
      return {
        kind: "failed",
        check: "parse_capacity",
        detail: "too many files being read",
        structure: checked,
      };
    try {
      await slot;
      const answer = await runWorker(bytes, limits);
      if ("check" in answer) return { kind: "failed", ...answer, structure: checked };
      return outcomeOf(answer, checked, limits);
    } finally {
      this.#slots.release();
    }
  }
}

/**
 * Reads a file in this thread, without the worker's time and memory limits: for the
 * scoring command over the service's own generated corpus, never for uploaded files.
 */
export async function readTrustedPdf(
  bytes: Uint8Array,
  limits: ParseLimits = DEFAULT_PARSE_LIMITS,
): Promise<ParseOutcome> {
  const checked = preflight(bytes, limits);
  if ("kind" in checked) return checked;
  const { readPdfText } = await import("./read-text.ts");
  return outcomeOf(await readPdfText(bytes, limits.maxPages), checked, limits);
}

/** The checks before any parser runs: size, header, object count. */
function preflight(bytes: Uint8Array, limits: ParseLimits): ParseOutcome | PdfStructure {
  if (bytes.length > limits.maxBytes)
    return {
      kind: "failed",
      check: "file_too_large",
      detail: `${bytes.length} bytes, limit ${limits.maxBytes}`,
    };
  const structure = scanStructure(bytes);
  if (!structure.isPdf) return { kind: "failed", check: "not_pdf", detail: "no %PDF- header", structure };
  if (structure.objects > limits.maxObjects)
    return {
      kind: "failed",
      check: "too_many_objects",
      detail: `${structure.objects} objects, limit ${limits.maxObjects}`,
      structure,
    };
  return structure;
}

function outcomeOf(answer: WorkerAnswer, structure: PdfStructure, limits: ParseLimits): ParseOutcome {
  if (answer.kind === "unreadable")
    return { kind: "failed", check: "pdf_unreadable", detail: answer.detail, structure };
  if (answer.kind === "too_many_pages")
    return {
      kind: "failed",
      check: "too_many_pages",
      detail: `${answer.pages} pages, limit ${limits.maxPages}`,
      structure,
    };
  return { kind: "ok", structure, pageCount: answer.pageCount, info: answer.info, pages: answer.pages };
}

type Failure = { check: "parse_timeout" | "parse_memory" | "pdf_unreadable"; detail: string };

function runWorker(bytes: Uint8Array, limits: ParseLimits): Promise<WorkerAnswer | Failure> {
  return new Promise((resolve) => {
    // A copy: the worker gets its own buffer, and the caller's bytes stay intact.
    const request: ParseRequest = { bytes: new Uint8Array(bytes), maxPages: limits.maxPages };
    const worker = new Worker(new URL("./parse-worker.ts", import.meta.url), {
      workerData: request,
      transferList: [request.bytes.buffer as ArrayBuffer],
      resourceLimits: {
        maxOldGenerationSizeMb: limits.memoryMb,
        maxYoungGenerationSizeMb: 16,
        codeRangeSizeMb: 16,
        stackSizeMb: 4,
      },
      stdout: true,
      stderr: true,
    });
    let settled = false;
    const settle = (value: WorkerAnswer | Failure) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(value);
      void worker.terminate();
    };
    const timer = setTimeout(
      () => settle({ check: "parse_timeout", detail: `not read within ${limits.timeoutMs} ms` }),
      limits.timeoutMs,
    );
    worker.once("message", (answer: WorkerAnswer) => settle(answer));
    worker.once("error", (err: Error & { code?: string }) =>
      settle(
        err.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? { check: "parse_memory", detail: `heap limit of ${limits.memoryMb} MB reached` }
          : { check: "pdf_unreadable", detail: `${err.name}: ${err.message}`.slice(0, 200) },
      ),
    );
    worker.once("exit", (code) =>
      settle({ check: "pdf_unreadable", detail: `reader exited with code ${code}` }),
    );
  });
}

/**
 * A counting semaphore with a bounded queue: parsing is CPU-bound, so at most a few run
 * at once, and a burst beyond the queue gets an immediate answer instead of waiting
 * without bound.
 */
class Semaphore {
  #free: number;
  readonly #maxQueue: number;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number, maxQueue: number) {
    this.#free = size;
    this.#maxQueue = maxQueue;
  }

  /** A promise of a slot, or undefined when the queue is full. */
  tryAcquire(): Promise<void> | undefined {
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    if (this.#waiting.length >= this.#maxQueue) return undefined;
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}
