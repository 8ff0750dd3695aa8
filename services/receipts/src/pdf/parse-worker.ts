// The worker thread that reads one untrusted PDF. It runs with a memory limit
// (`resourceLimits`) and is terminated by its parent at the time limit, so a hostile
// file can cost at most that much. pdf.js is told never to evaluate code, never to load
// fonts or XFA, and nothing is rendered: only metadata and text positions are read
// (read-text.ts). The parent terminates this thread, which frees everything pdf.js held.
import { parentPort, workerData } from "node:worker_threads";
import type { ParseRequest } from "./parse.ts";
import { readPdfText } from "./read-text.ts";

const { bytes, maxPages } = workerData as ParseRequest;

parentPort?.postMessage(await readPdfText(bytes, maxPages));
