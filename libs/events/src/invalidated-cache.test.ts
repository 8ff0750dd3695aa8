import { createLogger } from "@gw/log";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CacheOutcome, InvalidatedCache } from "./invalidated-cache.ts";
import { connectNats, type Nats } from "./nats.ts";
import { startNatsProxy } from "./nats-proxy.ts";

type NatsProxy = Awaited<ReturnType<typeof startNatsProxy>>;

const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const logger = createLogger("invalidated-cache-test", "silent");

let nats: Nats;
beforeAll(async () => {
  nats = await connectNats(NATS_URL, "invalidated-cache-test");
});
afterAll(async () => {
  await nats?.nc.close();
});

const subject = () => `invalidated-cache-test.${Math.random().toString(36).slice(2)}`;

/**
 * A started cache (round trips time out after 100 ms) on a NATS connection through a proxy
 * the test can hold, with the outcomes it reported; closed after `fn`.
 */
async function withHeldCache(
  fn: (h: { cache: InvalidatedCache<string>; proxy: NatsProxy; outcomes: CacheOutcome[] }) => Promise<void>,
) {
  const proxy = await startNatsProxy(NATS_URL);
  const own = await connectNats(proxy.url, "invalidated-cache-test-held");
  const outcomes: CacheOutcome[] = [];
  const cache = new InvalidatedCache<string>(own.nc, {
    subject: subject(),
    logger,
    what: "test",
    barrierTimeoutMs: 100,
    onOutcome: (o) => outcomes.push(o),
  });
  await cache.start();
  try {
    await fn({ cache, proxy, outcomes });
  } finally {
    cache.stop();
    await own.nc.close().catch(() => {});
    proxy.cut();
    await proxy.close();
  }
}

describe("InvalidatedCache", () => {
  it("keeps nothing before it has subscribed to invalidations, nor after it stopped", async () => {
    const outcomes: CacheOutcome[] = [];
    const cache = new InvalidatedCache<string>(nats.nc, {
      subject: subject(),
      logger,
      what: "test",
      onOutcome: (o) => outcomes.push(o),
    });
    expect(await cache.get("k", async () => "a")).toBe("a");
    expect(await cache.get("k", async () => "b")).toBe("b");
    await cache.start();
    try {
      expect(await cache.get("k", async () => "c")).toBe("c");
      expect(await cache.get("k", async () => "d")).toBe("c");
    } finally {
      cache.stop();
    }
    // Stopped, it hears no invalidation: it keeps nothing again.
    expect(await cache.get("k", async () => "e")).toBe("e");
    expect(await cache.get("k", async () => "f")).toBe("f");
    expect(outcomes).toEqual(["bypass", "bypass", "miss", "hit", "bypass", "bypass"]);
  });

  it("reads an entry again once it is older than maxAgeMs, though no invalidation came", async () => {
    // A lost invalidation: the source changes and nobody publishes.
    const cache = new InvalidatedCache<string>(nats.nc, {
      subject: subject(),
      logger,
      what: "test",
      maxAgeMs: 50,
    });
    await cache.start();
    try {
      let source = "old";
      const load = async () => source;
      expect(await cache.get("k", load)).toBe("old");
      source = "new";
      expect(await cache.get("k", load)).toBe("old");
      await new Promise((r) => setTimeout(r, 80));
      expect(await cache.get("k", load)).toBe("new");
    } finally {
      cache.stop();
    }
  });

  it("serves a fresh entry after a round trip its caller started earlier, and leaves none unhandled", async () => {
    await withHeldCache(async ({ cache, proxy, outcomes }) => {
      expect(await cache.get("k", async () => "cached")).toBe("cached");
      const early = cache.barrier();
      await early;
      // No PONG comes back from now on: a lookup that started its own round trip would
      // wait it out and read without the cache.
      proxy.delay(600_000);
      expect(await cache.get("k", async () => "read", early)).toBe("cached");
      // A round trip started and never awaited (its create answered a replay first) times
      // out without an unhandled rejection (vitest fails the run on one).
      void cache.barrier();
      await new Promise((r) => setTimeout(r, 200));
      expect(outcomes).toEqual(["miss", "hit"]);
    });
  });

  it("reads without the cache when the NATS round trip does not come back (a half-open connection)", async () => {
    await withHeldCache(async ({ cache, proxy, outcomes }) => {
      expect(await cache.get("k", async () => "cached")).toBe("cached");
      // From now on nothing the server sends reaches the client (its PONGs included); the
      // connection itself stays up. Without the timeout the lookup would wait for good.
      proxy.delay(600_000);
      expect(await cache.get("k", async () => "read")).toBe("read");
      expect(outcomes).toEqual(["miss", "bypass"]);
    });
  });
});
