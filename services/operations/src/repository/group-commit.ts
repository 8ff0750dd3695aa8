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

/** How a batcher batches. */
export interface BatchOptions {
  /** Writes of one statement at most (default 64). */
  maxBatch?: number;
  /** How long a statement holds the queue before the next batch goes beside it (default 50 ms). */
  stallMs?: number;
}

export interface GroupCommitOptions<I, O> extends BatchOptions {
  /** The metric label of this batcher. */
  kind: string;
  /** Items with the same key never share a statement: the later one waits for the next. */
  key: (item: I) => string;
  /**
   * One statement (autocommit) for `items`, answering each item's result in their order,
   * or `ALONE` for an item the statement left to a statement of its own (a row another
   * transaction holds locked, which a batch skips instead of waiting on). An item sent
   * alone is never answered `ALONE`.
   */
  run: (items: I[]) => Promise<(O | typeof ALONE)[]>;
}

/** What `run` answers for an item of a batch that must go in a statement of its own. */
export const ALONE: unique symbol = Symbol("alone");

const DEFAULT_MAX_BATCH = 64;
const DEFAULT_STALL_MS = 50;

interface Waiting<I, O> {
  item: I;
  resolve: (out: O) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit one level above Postgres: writes that arrive while this batcher's statement
 * is in flight wait for it, then go together in the next statement, one commit for all.
 * No timer while idle: a write that finds nothing in flight is sent at once, so a lone
 * create waits for nothing, and under load the batches grow with the wait.
 *
 * A statement still in flight after `stallMs` (waiting on a row lock, say) stops holding
 * the queue: the next batch goes beside it. So a write never waits behind another's lock
 * wait for long, and a transaction that holds a lock such a statement waits on, and itself
 * waits for a write of its own queued here, cannot wait for ever.
 *
 * Each caller gets its own result or its own error: when a batch's statement fails (a
 * constraint one row breaks, a deadlock), every item of it is sent again alone, so one row
 * never fails the others. A process dying with a statement in flight loses it whole or
 * commits it whole, as each of its writes alone would have been lost or committed.
 */
export class GroupCommit<I, O> {
  readonly #options: GroupCommitOptions<I, O>;
  #queue: Waiting<I, O>[] = [];
  /** Whether a statement is in flight and not yet stalled: new writes wait for it. */
  #sending = false;

  constructor(options: GroupCommitOptions<I, O>) {
    this.#options = options;
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      if (!this.#sending) this.#next();
    });
  }

  /** Sends the waiting writes as one statement, then the ones that came meanwhile, until none wait. */
  #next(): void {
    if (this.#queue.length === 0) {
      this.#sending = false;
      return;
    }
    this.#sending = true;
    const batch = this.#take();
    let stalled = false;
    const timer = setTimeout(() => {
      stalled = true;
      this.#next();
    }, this.#options.stallMs ?? DEFAULT_STALL_MS);
    void this.#send(batch).finally(() => {
      clearTimeout(timer);
      if (!stalled) this.#next();
    });
  }

  /** The oldest waiting items, one per key, at most `maxBatch`; the rest keep their places. */
  #take(): Waiting<I, O>[] {
    const keys = new Set<string>();
    const batch: Waiting<I, O>[] = [];
    const rest: Waiting<I, O>[] = [];
    for (const w of this.#queue) {
      const key = this.#options.key(w.item);
      if (batch.length < (this.#options.maxBatch ?? DEFAULT_MAX_BATCH) && !keys.has(key)) {
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
      for (const [i, w] of batch.entries()) {
        const out = outs[i];
        // Answered first, then its own statement: a caller never waits on another's lock.
        if (out === ALONE) void this.#alone(w);
        else w.resolve(out as O);
      }
    } catch (err) {
      if (batch.length === 1) {
        batch[0]?.reject(err);
        return;
      }
      // One item's failure is its own: each is tried again alone, side by side.
      await Promise.all(batch.map((w) => this.#alone(w)));
    }
  }

  /** `w` in a statement of its own, outside the queue. */
  async #alone(w: Waiting<I, O>): Promise<void> {
    batchSizes.observe({ kind: this.#options.kind }, 1);
    try {
      const [out] = await this.#options.run([w.item]);
      if (out === ALONE) throw new Error(`${this.#options.kind}: a write sent alone was answered ALONE`);
      w.resolve(out as O);
    } catch (err) {
      w.reject(err);
    }
  }
}
