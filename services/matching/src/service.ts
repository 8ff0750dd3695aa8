import type { ServiceImpl } from "@connectrpc/connect";
import type { Database } from "@gw/db";
import { Decimal, formatAmount, isCurrency } from "@gw/money";
import type { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { Code, failure } from "@gw/rpc";
import { and, count, eq, sum } from "drizzle-orm";
import { poolPayouts } from "./db/schema.ts";

/** The pool's read surface. */
export class MatchingHandlers implements ServiceImpl<typeof MatchingService> {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async getPoolDepth(req: { method: string; currency: string }) {
    if (!isCurrency(req.currency))
      throw failure(Code.InvalidArgument, "validation_failed", "unknown currency", "currency");
    const [row] = await this.#db
      .select({ payouts: count(), free: sum(poolPayouts.freeAmount) })
      .from(poolPayouts)
      .where(and(eq(poolPayouts.method, req.method), eq(poolPayouts.currency, req.currency)));
    return {
      payouts: BigInt(row?.payouts ?? 0),
      freeAmount: formatAmount(new Decimal(row?.free ?? "0"), req.currency),
    };
  }
}
