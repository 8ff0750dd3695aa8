import type { OperationStore } from "../repository/operations.ts";

/** What a `NotifiedLoop` runs and how often. */
export interface NotifiedLoopOptions {
  store: Pick<OperationStore, "listen">;
  /** The Postgres channel whose NOTIFY (sent at the commit that makes work due) wakes the loop. */
  channel: string;
  /** How long an idle loop sleeps between passes when nothing notifies it. */
  intervalMs: number;
  /** The most rows one pass takes: a full pass runs the next one at once. */
  batchSize: number;
  /** One pass over the due rows; resolves how many it took. */
  pass: () => Promise<number>;
  /** Called with a pass that threw; the loop goes on with the next one. */
  onError: (err: unknown) => void;
}

/**
 * The loop of a driver that works through due rows of a table (hand-offs, withdrawals):
 * a pass at once after a full pass or a wake-up, else after `intervalMs`; woken by a
 * NOTIFY on its channel, or by `wake()` from the driver itself. No transaction or lock is
 * held between passes; the rows' own leases keep replicas apart.
 */
export class NotifiedLoop {
  readonly #o: NotifiedLoopOptions;
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;
  #wakeSleeper: (() => void) | undefined;
  #notified = false;
  #unlisten: (() => Promise<void>) | undefined;

  constructor(options: NotifiedLoopOptions) {
    this.#o = options;
  }

  /** Aborts when the loop stops, so a pass's provider calls end with it. */
  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  async start(): Promise<void> {
    this.#unlisten = await this.#o.store.listen(this.#o.channel, () => this.wake());
    this.#loop ??= this.#run();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    this.#wakeSleeper?.();
    await this.#loop;
    await this.#unlisten?.().catch(() => {});
  }

  /** Runs the next pass without waiting out the interval (work became due). */
  wake(): void {
    this.#notified = true;
    this.#wakeSleeper?.();
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      this.#notified = false;
      let handled = 0;
      try {
        handled = await this.#o.pass();
      } catch (err) {
        this.#o.onError(err);
      }
      if (signal.aborted) break;
      if (handled >= this.#o.batchSize || this.#notified) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#o.intervalMs);
        this.#wakeSleeper = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wakeSleeper = undefined;
    }
  }
}
