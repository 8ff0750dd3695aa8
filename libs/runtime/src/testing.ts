import { fork } from "node:child_process";
import { request } from "node:http";
import { fileURLToPath } from "node:url";

/**
 * Test support for the body limits: uploads a multipart form of a given size many times
 * with `fetch` (undici's keep-alive pool, as a merchant's SDK sends it) and reports what
 * came back. Every run either reads a status and its whole body, or counts a socket error
 * (EPIPE, ECONNRESET, "other side closed"): the figure the body limit tests hold at zero.
 */
export interface UploadRunsOptions {
  url: string;
  headers?: Record<string, string>;
  /** Bytes of the file part. */
  fileBytes: number;
  runs: number;
  /** Uploads in flight at once. */
  concurrency?: number;
  /** Extra text fields of the form. */
  fields?: Record<string, string>;
}

export interface UploadRunsResult {
  /** How many runs got each status. */
  statuses: Record<number, number>;
  /** Bodies that were not the expected shape, by the check the caller passes. */
  badBodies: string[];
  /** Socket errors, with their codes. */
  errors: string[];
}

/**
 * Runs the uploads in a child process of its own (`upload-runs.child.ts`), as a client on
 * another machine would: a client in the server's own process shares its event loop, and
 * its writes then never race the server's answer.
 */
export async function uploadRunsElsewhere(
  options: UploadRunsOptions,
  expected: ExpectedBody,
): Promise<UploadRunsResult> {
  const child = fork(fileURLToPath(new URL("./upload-runs.child.ts", import.meta.url)), [], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    child.once("message", (m) => {
      resolve(m as UploadRunsResult);
      child.kill();
    });
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`upload runner exited with ${code}`)));
    child.send({ options, expected });
  });
}

/** What a whole answer carries: the one JSON error shape with `code`, or a text. */
export type ExpectedBody = { errorCode: string } | { contains: string };

export const bodyMatches = (expected: ExpectedBody) => (_status: number, body: string) => {
  if ("contains" in expected) return body.includes(expected.contains);
  try {
    return (JSON.parse(body) as { error?: { code?: string } }).error?.code === expected.errorCode;
  } catch {
    return false;
  }
};

export async function uploadRuns(
  options: UploadRunsOptions,
  bodyOk: (status: number, body: string) => boolean,
): Promise<UploadRunsResult> {
  // A PDF's magic, so that a surface checking it passes the file on.
  const file = new Uint8Array(options.fileBytes).fill(0x25);
  file.set(new TextEncoder().encode("%PDF-1.7\n"));
  const result: UploadRunsResult = { statuses: {}, badBodies: [], errors: [] };
  let next = 0;
  const worker = async () => {
    while (next < options.runs) {
      next++;
      const form = new FormData();
      for (const [k, v] of Object.entries(options.fields ?? {})) form.append(k, v);
      form.append("receipt", new Blob([file], { type: "application/pdf" }), "receipt.pdf");
      try {
        const res = await fetch(options.url, { method: "POST", headers: options.headers, body: form });
        const body = await res.text();
        result.statuses[res.status] = (result.statuses[res.status] ?? 0) + 1;
        if (!bodyOk(res.status, body)) result.badBodies.push(`${res.status} ${body.slice(0, 200)}`);
      } catch (err) {
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        result.errors.push(cause?.code ?? cause?.message ?? String(err));
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 4 }, worker));
  return result;
}

export interface OverLimitResult {
  status: number;
  body: string;
  /** Bytes of body the client had written when the answer arrived. */
  sentBeforeAnswer: number;
  /** Socket error the client saw before the answer, if any. */
  error?: string;
}

/**
 * Sends a body far over a limit (`totalBytes`, in 64 KiB writes) to `url`, declared
 * (`Content-Length`) or chunked, writing until the answer arrives, and resolves with the
 * answer and how much of the body had been written by then.
 */
export function sendOverLimit(options: {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  totalBytes: number;
  chunked: boolean;
}): Promise<OverLimitResult> {
  const target = new URL(options.url);
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  return new Promise((resolve) => {
    let sent = 0;
    let answer: OverLimitResult | undefined;
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: options.method ?? "POST",
        agent: false,
        headers: {
          "content-type": "application/octet-stream",
          ...options.headers,
          ...(options.chunked
            ? { "transfer-encoding": "chunked" }
            : { "content-length": options.totalBytes }),
        },
      },
      (res) => {
        let body = "";
        const sentBeforeAnswer = sent;
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          body += d;
        });
        res.on("end", () => {
          answer = { status: res.statusCode ?? 0, body, sentBeforeAnswer };
          resolve(answer);
          req.destroy();
        });
      },
    );
    req.on("error", (err: NodeJS.ErrnoException) => {
      if (!answer) resolve({ status: 0, body: "", sentBeforeAnswer: sent, error: err.code ?? err.message });
    });
    const write = () => {
      while (sent < options.totalBytes && !req.destroyed) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once("drain", write);
      }
      if (!req.destroyed) req.end();
    };
    write();
  });
}

/** The process's memory that a buffered body would grow: the JS heap and array buffers. */
export function bufferedMemory(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}
