import type { ServiceImpl } from "@connectrpc/connect";
import type { Database } from "@gw/db";
import type { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import { count, sql } from "drizzle-orm";
import { receiptFiles } from "./db/schema.ts";

/** The receipts read surface; uploads and checks arrive with the receipts work. */
export class ReceiptsHandlers implements ServiceImpl<typeof ReceiptsService> {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /** How many receipt files are stored and how many bytes they take. */
  async getStorageStats() {
    // The sum is taken in Postgres as numeric and read back as text: a bigint sum of
    // sizes could exceed what a JS number holds exactly.
    const [row] = await this.#db
      .select({ files: count(), bytes: sql<string>`coalesce(sum(${receiptFiles.sizeBytes}), 0)::text` })
      .from(receiptFiles);
    return { files: BigInt(row?.files ?? 0), bytes: BigInt(row?.bytes ?? "0") };
  }
}
