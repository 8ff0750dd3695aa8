import type { Logger } from "@gw/log";
import type { PoolStore } from "./pool.ts";
import { SWEEP_BATCH } from "./service.ts";

/**
 * The pool's background sweep: every interval it closes payouts whose window ended and
 * that hold no reserved slot (handing the remainder off). It never releases a slot: a
 * slot lives as long as its payment, and operations releases it when the payment ends.
 * Each round is one bounded batch; a full batch runs the next round at once. Replicas
 * share the work through `for update skip locked`.
 */
export class PoolSweeper {
  readonly #store: PoolStore;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  #running = false;

  constructor(store: PoolStore, logger: Logger, intervalMs: number) {
    this.#store = store;
    this.#logger = logger;
    this.#intervalMs = intervalMs;
  }

  start(): void {
    this.#running = true;
    this.#schedule(this.#intervalMs);
  }

  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    await this.#round;
  }

  #schedule(delayMs: number): void {
    if (!this.#running) return;
    this.#timer = setTimeout(() => {
      this.#round = this.#runRound().then((full) => this.#schedule(full ? 0 : this.#intervalMs));
    }, delayMs);
  }

  /** One round; true when a batch was full and more work is likely waiting. */
  async #runRound(): Promise<boolean> {
    try {
      const closed = await this.#store.closeEndedWindows(SWEEP_BATCH);
      if (closed.length > 0) this.#logger.info({ closedPayouts: closed.length }, "pool sweep");
      return closed.length === SWEEP_BATCH;
    } catch (err) {
      this.#logger.error({ err }, "pool sweep failed");
      return false;
    }
  }
}
