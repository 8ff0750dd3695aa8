import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { DeliveredBatches } from "./delivered-batches.ts";

/**
 * An async iterable fed by hand, like a pull consumer's messages: `next()` answers a
 * message already there at once and otherwise waits, in the order the calls were made.
 */
function feed<T>() {
  const queued: T[] = [];
  const waiting: ((r: IteratorResult<T>) => void)[] = [];
  let ended = false;
  const iterable: AsyncIterable<T> = {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        const value = queued.shift();
        if (value !== undefined) return Promise.resolve({ done: false, value });
        if (ended) return Promise.resolve({ done: true, value: undefined });
        return new Promise((resolve) => waiting.push(resolve));
      },
    }),
  };
  return {
    iterable,
    push(...values: T[]) {
      for (const value of values) {
        const resolve = waiting.shift();
        if (resolve) resolve({ done: false, value });
        else queued.push(value);
      }
    },
    end() {
      ended = true;
      for (const resolve of waiting.splice(0)) resolve({ done: true, value: undefined });
    },
  };
}

/** The take's answer, or "still waiting" when it has none within `ms`. */
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, sleep(ms, "still waiting" as const)]);

describe("DeliveredBatches", () => {
  it("hands out a lone message at once instead of waiting for more", async () => {
    const f = feed<string>();
    const batches = new DeliveredBatches(f.iterable);
    f.push("a");
    expect(await within(batches.take(64), 50)).toEqual(["a"]);
  });

  it("waits for a first message when none is there", async () => {
    const f = feed<string>();
    const batches = new DeliveredBatches(f.iterable);
    const taking = batches.take(64);
    expect(await within(taking, 20)).toBe("still waiting");
    // Both arrive together: the waiting take gets both.
    f.push("a", "b");
    expect(await taking).toEqual(["a", "b"]);
  });

  it("takes the messages already there, in order, up to its bound, and leaves the rest", async () => {
    const f = feed<number>();
    const batches = new DeliveredBatches(f.iterable);
    f.push(1, 2, 3, 4, 5);
    expect(await batches.take(3)).toEqual([1, 2, 3]);
    expect(await batches.take(10)).toEqual([4, 5]);
  });

  it("loses no message that arrives after a take stopped looking", async () => {
    const f = feed<string>();
    const batches = new DeliveredBatches(f.iterable);
    f.push("a");
    // The take looked once more after "a", found nothing, and kept that look pending.
    expect(await batches.take(64)).toEqual(["a"]);
    f.push("b", "c");
    expect(await batches.take(64)).toEqual(["b", "c"]);
  });

  it("answers undefined once the iterator has ended, after its last messages", async () => {
    const f = feed<string>();
    const batches = new DeliveredBatches(f.iterable);
    f.push("a");
    f.end();
    expect(await batches.take(64)).toEqual(["a"]);
    expect(await batches.take(64)).toBeUndefined();
    // A take waiting for its first message when the iterator ends.
    const g = feed<string>();
    const ending = new DeliveredBatches(g.iterable).take(64);
    g.end();
    expect(await ending).toBeUndefined();
  });

  it("refuses a bound below one", async () => {
    await expect(new DeliveredBatches(feed<string>().iterable).take(0)).rejects.toThrow(/at least one/);
  });
});
