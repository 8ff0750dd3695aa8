import { loadConfig } from "@gw/config";
import { grpcServiceConfig } from "@gw/runtime";
import { z } from "zod";

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

export const configSchema = grpcServiceConfig(50054, 9104).extend({
  /**
   * The HMAC key of signed receipt links (at least 32 characters). Unset, links cannot be
   * signed: SignReceiptUrls answers UNAVAILABLE and the state read reports
   * `receipt_evidence_status: unavailable`, as the spec allows.
   */
  RECEIPT_URL_SECRET: z.string().min(32, "at least 32 characters").optional(),
  /** The public base of the edge that serves `/receipts/{id}` (outside `/v1`: the link itself is the credential): HTTPS, HTTP only on loopback (local runs). */
  RECEIPT_URL_BASE: z
    .string()
    .url()
    .default("http://127.0.0.1:8080")
    .refine((value) => {
      const url = new URL(value);
      return url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK.has(url.hostname));
    }, "must be https (http only for a loopback host)"),
  /** How long a signed receipt link stays valid. */
  RECEIPT_URL_TTL_SECONDS: z.coerce.number().int().min(10).max(3600).default(300),
  /** Files above this are refused and not stored (the edge should cap uploads at the same size). */
  RECEIPT_STORE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(20 * 1024 * 1024),
  /** Files above this are stored but not read: manual_check/not_terminal. */
  RECEIPT_PARSE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(5 * 1024 * 1024),
  RECEIPT_PARSE_MAX_PAGES: z.coerce.number().int().min(1).max(100).default(5),
  RECEIPT_PARSE_MAX_OBJECTS: z.coerce.number().int().min(10).default(5000),
  RECEIPT_PARSE_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  RECEIPT_PARSE_MEMORY_MB: z.coerce.number().int().min(32).max(2048).default(128),
  /** Files read at once (CPU-bound, one worker thread each) and how many may wait. */
  RECEIPT_PARSE_CONCURRENCY: z.coerce.number().int().min(1).max(32).default(2),
  RECEIPT_PARSE_QUEUE: z.coerce.number().int().min(0).max(1000).default(32),
});
export type ReceiptsConfig = z.infer<typeof configSchema>;
export const readConfig = () => loadConfig(configSchema);
