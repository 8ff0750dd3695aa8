import { setImmediate as nextTurn } from "node:timers/promises";

/** What a look at the source answers when no message is there yet. */
const NOTHING_YET = Symbol("nothing yet");

/**
 * Takes messages from an async iterator in batches of what is already there: `take`
 * waits for one message, then adds the ones the iterator holds behind it, and stops at
 * the first that is not there yet rather than waiting on a timer for more. A lone
 * message is therefore handed out at once, and a burst in as few batches as its bound
 * allows.
 *
 * A look that found nothing keeps its pending `next()` for the following `take`: an
 * async iterator cannot take back a `next()`, so dropping it would lose the message it
 * resolves with.
 */
export class DeliveredBatches<M> {
  readonly #iterator: AsyncIterator<M>;
  #pending: Promise<IteratorResult<M>> | undefined;

  constructor(source: AsyncIterable<M>) {
    this.#iterator = source[Symbol.asyncIterator]();
  }

  /**
   * Waits for the next message and returns it with the ones already delivered behind it,
   * `max` at most, in the iterator's order; undefined once the iterator has ended.
   */
  async take(max: number): Promise<M[] | undefined> {
    if (!(max >= 1)) throw new Error(`a batch holds at least one message, not ${max}`);
    const first = await this.#look();
    this.#pending = undefined;
    if (first.done) return undefined;
    const batch = [first.value];
    while (batch.length < max) {
      // Messages the iterator holds resolve within microtasks, before the next turn of
      // the event loop; one that is still on its way does not, and is left for later.
      const next = await Promise.race([this.#look(), nextTurn(NOTHING_YET)]);
      if (next === NOTHING_YET) break;
      this.#pending = undefined;
      if (next.done) break;
      batch.push(next.value);
    }
    return batch;
  }

  /** The pending `next()`, or a new one; `take` forgets it only once its result is in hand. */
  #look(): Promise<IteratorResult<M>> {
    this.#pending ??= this.#iterator.next();
    return this.#pending;
  }
}
