/**
 * How many writes the stack's batched statements carried over a window: the histograms
 * every replica exports (`operations_write_batch_size{kind}`: claims and row writes of
 * operations; `events_consumer_batch_size{consumer}`: events one consumer transaction
 * applied), read from each process's metrics endpoint at the window's start and end.
 */
import type { TestStack } from "../src/stack.ts";

const HISTOGRAMS = ["operations_write_batch_size", "events_consumer_batch_size"];

/** Sum and count of each histogram series, by `<metric>{<labels>}` summed over replicas. */
export type BatchSnapshot = Map<string, { sum: number; count: number }>;

export async function snapshotBatches(stack: TestStack): Promise<BatchSnapshot> {
  const out: BatchSnapshot = new Map();
  for (const instance of await stack.instances()) {
    const text = await fetch(`http://127.0.0.1:${instance.metricsPort}/metrics`)
      .then((r) => (r.ok ? r.text() : ""))
      .catch(() => "");
    for (const line of text.split("\n")) {
      const m = /^(\w+)_(sum|count)(\{[^}]*\})? ([\d.eE+-]+)$/.exec(line);
      if (!m || !HISTOGRAMS.includes(m[1] as string)) continue;
      const key = `${m[1]}${m[3] ?? ""}`;
      const entry = out.get(key) ?? { sum: 0, count: 0 };
      entry[m[2] as "sum" | "count"] += Number(m[4]);
      out.set(key, entry);
    }
  }
  return out;
}

/** Mean writes per statement of each series that ran in the window, as `label mean (statements)`. */
export function formatBatches(before: BatchSnapshot, after: BatchSnapshot): string {
  const parts: string[] = [];
  for (const [key, end] of after) {
    const start = before.get(key) ?? { sum: 0, count: 0 };
    const statements = end.count - start.count;
    if (statements <= 0) continue;
    const label = key
      .replace(/^operations_write_batch_size\{kind="(\w+)"\}$/, "operations $1")
      .replace(/^events_consumer_batch_size\{consumer="([\w-]+)"\}$/, "consumer $1");
    parts.push(`${label} ${((end.sum - start.sum) / statements).toFixed(1)} (${statements})`);
  }
  return parts.length === 0 ? "none" : parts.join(", ");
}
