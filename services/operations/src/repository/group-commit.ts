import { metricsRegistry } from "@gw/rpc";
import { Histogram } from "prom-client";

/** How many writes each batched statement carried, by kind (`claim`, `transition`). */
const batchSizes = new Histogram({
  name: "operations_write_batch_size",
  help: "Writes carried by one batched statement (one commit) of the operations repository",
  labelNames: ["kind"],
  buckets: [1, 2, 4, 8, 16, 32, 64, 128],
  registers: [metricsRegistry],
});

export interface GroupCommitOptions<I, O> {
  /** The metric label of this batcher. */
  kind: string;
  /** Writes of one statement at most. */
  maxBatch: number;
  /** Items with the same key never share a statement: the later one waits for the next. */
  key: (item: I) => string;
  /** One statement (autocommit) for `items`, answering each item's result in their order. */
  run: (items: I[]) => Promise<O[]>;
}

interface Waiting<I, O> {
  item: I;
  resolve: (out: O) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit one level above Postgres: writes that arrive while this batcher's statement
 * is in flight wait for it, then go together in the next statement, one commit for all.
 * No timer: a write that finds nothing in flight is sent at once, so a lone create waits
 * for nothing, and under load the batches grow with the wait.
 *
 * Each caller gets its own result or its own error: when a batch's statement fails (a
 * constraint one row breaks, a deadlock), every item of it is sent again alone, so one row
 * never fails the others. A process dying with a statement in flight loses it whole or
 * commits it whole, as each of its writes alone would have been lost or committed.
 */
export class GroupCommit<I, O> {
  readonly #options: GroupCommitOptions<I, O>;
  #queue: Waiting<I, O>[] = [];
  #inFlight = false;

  constructor(options: GroupCommitOptions<I, O>) {
    this.#options = options;
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      if (!this.#inFlight) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#inFlight = true;
    try {
      while (this.#queue.length > 0) await this.#send(this.#take());
    } finally {
      this.#inFlight = false;
    }
  }

  /** The oldest waiting items, one per key, at most `maxBatch`; the rest keep their places. */
  #take(): Waiting<I, O>[] {
    const keys = new Set<string>();
    const batch: Waiting<I, O>[] = [];
    const rest: Waiting<I, O>[] = [];
    for (const w of this.#queue) {
      const key = this.#options.key(w.item);
      if (batch.length < this.#options.maxBatch && !keys.has(key)) {
        keys.add(key);
        batch.push(w);
      } else rest.push(w);
    }
    this.#queue = rest;
    return batch;
  }

  async #send(batch: Waiting<I, O>[]): Promise<void> {
    batchSizes.observe({ kind: this.#options.kind }, batch.length);
    try {
      const outs = await this.#options.run(batch.map((w) => w.item));
      if (outs.length !== batch.length)
        throw new Error(`${this.#options.kind}: ${outs.length} results for ${batch.length} writes`);
      for (const [i, w] of batch.entries()) w.resolve(outs[i] as O);
    } catch (err) {
      if (batch.length === 1) {
        batch[0]?.reject(err);
        return;
      }
      // One item's failure is its own: each is tried again alone, side by side.
      await Promise.all(
        batch.map((w) =>
          this.#options.run([w.item]).then(
            (outs) => w.resolve(outs[0] as O),
            (e: unknown) => w.reject(e),
          ),
        ),
      );
    }
  }
}
