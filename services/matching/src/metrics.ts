import type { Sql } from "@gw/db";
import { metricsRegistry } from "@gw/rpc";
import { Gauge } from "prom-client";

/** The pool this process reports on; set by `reportPoolDepth` when the service starts. */
let pool: Sql | undefined;

/** Reads the open pool once per scrape, for both gauges. */
let pending: Promise<{ method: string; currency: string; open: number; free: number }[]> | undefined;

function sample() {
  pending ??= (async () => {
    try {
      if (pool === undefined) return [];
      const rows = await pool<{ method: string; currency: string; open: string; free: string }[]>`
        select method, currency, count(*) as open, coalesce(sum(free_amount), 0) as free
        from matching.pool_payouts where status = 'open' group by method, currency`;
      return rows.map((r) => ({ ...r, open: Number(r.open), free: Number(r.free) }));
    } finally {
      // The next scrape reads again; the two gauges of one scrape share this read.
      setImmediate(() => {
        pending = undefined;
      });
    }
  })();
  return pending;
}

/**
 * Open pool payouts per method and currency. The same database-wide figure from every
 * replica: take the max, not the sum.
 */
export const openPayouts = new Gauge({
  name: "matching_pool_open_payouts",
  help: "Open payouts in the self-matching pool, per method and currency (database-wide; max over replicas).",
  labelNames: ["method", "currency"],
  registers: [metricsRegistry],
  async collect() {
    const rows = await sample().catch(() => undefined);
    if (rows === undefined) return;
    this.reset();
    for (const r of rows) this.set({ method: r.method, currency: r.currency }, r.open);
  },
});

/**
 * Free liquidity (what payins can still be admitted into), per method and currency, in
 * major units. A float is fine for a dashboard; balances live in the ledger.
 */
export const freeLiquidity = new Gauge({
  name: "matching_pool_free_amount",
  help: "Free amount of the open self-matching pool, per method and currency, in major units (database-wide; max over replicas).",
  labelNames: ["method", "currency"],
  registers: [metricsRegistry],
  async collect() {
    const rows = await sample().catch(() => undefined);
    if (rows === undefined) return;
    this.reset();
    for (const r of rows) this.set({ method: r.method, currency: r.currency }, r.free);
  },
});

/** Makes the pool gauges read this service's pool at every scrape. */
export function reportPoolDepth(sql: Sql): void {
  pool = sql;
}
