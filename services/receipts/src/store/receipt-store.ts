import { createHash } from "node:crypto";
import type { Database } from "@gw/db";
import { count, eq, sql } from "drizzle-orm";
import { receiptBlobs } from "../db/schema.ts";

/** A stored file's address and size. */
export interface StoredFile {
  /** Lowercase hex sha256 of the bytes: the key in the store. */
  sha256: string;
  sizeBytes: number;
}

/**
 * Durable storage of receipt files, addressed by content.
 *
 * The contract every implementation keeps (Postgres here, an S3-compatible bucket in
 * production):
 * - `put` resolves only once the bytes are durable (a committed row; for S3 a
 *   successful PutObject of `receipts/<sha256>` with `ChecksumSHA256` set, so the store
 *   itself rejects a corrupted upload). Putting bytes already stored is a no-op that
 *   succeeds: the key is the content hash, so a race of two puts of the same file stores
 *   one object.
 * - `get` returns exactly the bytes put under that key, or undefined when there is none.
 * - Nothing is ever deleted or overwritten by the service: a receipt is evidence.
 * - Errors (store unreachable) are thrown; the caller answers UNAVAILABLE and records
 *   nothing, so a retry of the upload is safe.
 */
export interface ReceiptStore {
  put(bytes: Uint8Array): Promise<StoredFile>;
  get(sha256: string): Promise<Uint8Array | undefined>;
  /** How many files are stored and how many bytes they take. */
  stats(): Promise<{ files: bigint; bytes: bigint }>;
}

export const sha256Hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** `ReceiptStore` on the service's own Postgres schema (bytea, one row per distinct content). */
export class PostgresReceiptStore implements ReceiptStore {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async put(bytes: Uint8Array): Promise<StoredFile> {
    const sha256 = sha256Hex(bytes);
    await this.#db
      .insert(receiptBlobs)
      .values({ sha256, sizeBytes: BigInt(bytes.length), bytes })
      .onConflictDoNothing({ target: receiptBlobs.sha256 });
    return { sha256, sizeBytes: bytes.length };
  }

  async get(sha256: string): Promise<Uint8Array | undefined> {
    const [row] = await this.#db
      .select({ bytes: receiptBlobs.bytes })
      .from(receiptBlobs)
      .where(eq(receiptBlobs.sha256, sha256));
    return row?.bytes;
  }

  async stats() {
    // The sum is taken in Postgres as numeric and read back as text: a bigint sum of
    // sizes could exceed what a JS number holds exactly.
    const [row] = await this.#db
      .select({ files: count(), bytes: sql<string>`coalesce(sum(${receiptBlobs.sizeBytes}), 0)::text` })
      .from(receiptBlobs);
    return { files: BigInt(row?.files ?? 0), bytes: BigInt(row?.bytes ?? "0") };
  }
}
