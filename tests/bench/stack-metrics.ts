/**
 * Figures the stack's processes export, read from each one's metrics endpoint at a
 * window's start and end: how many writes the batched statements carried (the
 * histograms `operations_write_batch_size{kind}`: claims and row writes of operations;
 * `events_consumer_batch_size{consumer}`: events one consumer transaction applied), and
 * the creates the sandbox provider received (`sandbox_create_requests_total`: one
 * statement, one commit each, in the same database as the gateway's).
 */
import type { TestStack } from "../src/stack.ts";

const HISTOGRAMS = ["operations_write_batch_size", "events_consumer_batch_size"];

/** Every process's metrics text, by instance name. */
async function scrapeEach(stack: TestStack): Promise<Map<string, string>> {
  const instances = await stack.instances();
  const texts = await Promise.all(
    instances.map((instance) =>
      fetch(`http://127.0.0.1:${instance.metricsPort}/metrics`)
        .then((r) => (r.ok ? r.text() : ""))
        .catch(() => ""),
    ),
  );
  return new Map(instances.map((instance, i) => [instance.name, texts[i] ?? ""]));
}

const scrape = async (stack: TestStack) => [...(await scrapeEach(stack)).values()];

/** The sum of every series of `metric` in one process's text (`metric` matched whole). */
const seriesSum = (text: string, metric: string) =>
  [...text.matchAll(new RegExp(`^${metric}(?:\\{[^}]*\\})? ([\\d.eE+-]+)$`, "gm"))].reduce(
    (total, m) => total + Number(m[1]),
    0,
  );

/**
 * Each process's event-loop delay and GC over a window: the window starts with a scrape,
 * which resets the delay histogram prom-client keeps (`nodejs_eventloop_lag_*`, from
 * `monitorEventLoopDelay`), and its end reads what the loop saw since, with the GC pause
 * time (`nodejs_gc_duration_seconds`) between the two.
 */
export async function startLoopWindow(stack: TestStack): Promise<() => Promise<string>> {
  const gcBefore = new Map(
    [...(await scrapeEach(stack))].map(([n, t]) => [n, seriesSum(t, "nodejs_gc_duration_seconds_sum")]),
  );
  const started = performance.now();
  return async () => {
    const seconds = (performance.now() - started) / 1000;
    const rows: string[] = [];
    for (const [name, text] of await scrapeEach(stack)) {
      const p99 = seriesSum(text, "nodejs_eventloop_lag_p99_seconds") * 1000;
      const max = seriesSum(text, "nodejs_eventloop_lag_max_seconds") * 1000;
      const gc =
        ((seriesSum(text, "nodejs_gc_duration_seconds_sum") - (gcBefore.get(name) ?? 0)) * 1000) / seconds;
      if (text) rows.push(`${name} ${p99.toFixed(1)}/${max.toFixed(1)}/${gc.toFixed(1)}`);
    }
    return rows.join(", ");
  };
}

/** The creates the sandbox provider has received, every provider, direction and decision. */
export async function sandboxCreates(stack: TestStack): Promise<number> {
  let total = 0;
  for (const text of await scrape(stack))
    for (const m of text.matchAll(/^sandbox_create_requests_total\{[^}]*\} ([\d.eE+-]+)$/gm))
      total += Number(m[1]);
  return total;
}

/** Sum and count of each histogram series, by `<metric>{<labels>}` summed over replicas. */
export type BatchSnapshot = Map<string, { sum: number; count: number }>;

export async function snapshotBatches(stack: TestStack): Promise<BatchSnapshot> {
  const out: BatchSnapshot = new Map();
  for (const text of await scrape(stack)) {
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
