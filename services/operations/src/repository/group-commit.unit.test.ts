import { describe, expect, it, vi } from "vitest";
import { GroupCommit } from "./group-commit.ts";

/** A batcher over a fake statement that records each batch it was sent and can be held open. */
function batcher(options: { maxBatch?: number; stallMs?: number; fails?: (item: string) => boolean } = {}) {
  const batches: string[][] = [];
  let release: (() => void) | undefined;
  let held: Promise<void> | undefined;
  const g = new GroupCommit<string, string>({
    kind: "test",
    maxBatch: options.maxBatch ?? 64,
    stallMs: options.stallMs ?? 60_000,
    key: (item) => item.split(":")[0] ?? item,
    run: async (items) => {
      batches.push(items);
      if (held) await held;
      if (options.fails && items.some(options.fails)) throw new Error(`batch of ${items.join(",")} failed`);
      return items.map((i) => `done ${i}`);
    },
  });
  return {
    g,
    batches,
    hold: () => {
      held = new Promise((r) => {
        release = () => {
          held = undefined;
          r();
        };
      });
    },
    release: () => release?.(),
  };
}

describe("GroupCommit", () => {
  it("sends a write that finds nothing in flight at once, alone", async () => {
    const b = batcher();
    expect(await b.g.submit("a")).toBe("done a");
    expect(await b.g.submit("b")).toBe("done b");
    expect(b.batches).toEqual([["a"], ["b"]]);
  });

  it("sends the writes that arrived during a statement together in the next, each answered its own", async () => {
    const b = batcher();
    b.hold();
    const first = b.g.submit("a");
    const rest = ["b", "c", "d"].map((i) => b.g.submit(i));
    b.release();
    expect(await first).toBe("done a");
    expect(await Promise.all(rest)).toEqual(["done b", "done c", "done d"]);
    expect(b.batches).toEqual([["a"], ["b", "c", "d"]]);
  });

  it("never puts two writes of one key in a statement, and keeps the order of the rest", async () => {
    const b = batcher();
    b.hold();
    const all = [b.g.submit("x"), b.g.submit("k:1"), b.g.submit("y"), b.g.submit("k:2"), b.g.submit("z")];
    b.release();
    await Promise.all(all);
    expect(b.batches).toEqual([["x"], ["k:1", "y", "z"], ["k:2"]]);
  });

  it("carries at most maxBatch writes in a statement", async () => {
    const b = batcher({ maxBatch: 2 });
    b.hold();
    const all = ["a", "b", "c", "d", "e", "f"].map((i) => b.g.submit(i));
    b.release();
    await Promise.all(all);
    expect(b.batches.map((x) => x.length)).toEqual([1, 2, 2, 1]);
  });

  it("fails only the write that fails: the batch's others are sent again alone and answered", async () => {
    const b = batcher({ fails: (i) => i === "bad" });
    b.hold();
    const first = b.g.submit("a");
    const results = ["b", "bad", "c"].map((i) => b.g.submit(i).then(String, (e: Error) => e.message));
    b.release();
    await first;
    expect(await Promise.all(results)).toEqual(["done b", "batch of bad failed", "done c"]);
    expect(b.batches).toEqual([["a"], ["b", "bad", "c"], ["b"], ["bad"], ["c"]]);
    // And the batcher goes on.
    expect(await b.g.submit("after")).toBe("done after");
  });

  it("lets the next batch go beside a statement stalled past stallMs, and sends nothing early while one runs", async () => {
    vi.useFakeTimers();
    try {
      const b = batcher({ stallMs: 30 });
      b.hold();
      const stuck = b.g.submit("a");
      const queued = b.g.submit("b");
      // Within the stall, "b" waits for the statement in flight.
      await vi.advanceTimersByTimeAsync(29);
      expect(b.batches).toEqual([["a"]]);
      // Past it, "b" goes in a statement of its own (which the hold also keeps open).
      await vi.advanceTimersByTimeAsync(1);
      expect(b.batches).toEqual([["a"], ["b"]]);
      b.release();
      expect(await Promise.all([stuck, queued])).toEqual(["done a", "done b"]);
    } finally {
      vi.useRealTimers();
    }
  });
});
