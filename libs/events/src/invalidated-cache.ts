import type { Logger } from "@gw/log";
import type { Nats } from "./nats.ts";

/** How one lookup was answered: from the cache after the barrier, from `load`, or `load` with the cache unusable. */
export type CacheOutcome = "hit" | "miss" | "bypass";

export interface InvalidatedCacheOptions<V> {
  /** The core-NATS subject the replicas invalidate on (outside the events stream). */
  subject: string;
  logger: Logger;
  /** What a log line calls an entry ("API key", "pricing terms"). */
  what: string;
  /** Entries remembered at most; past it the oldest goes. */
  maxEntries?: number;
  /** Whether a loaded value may be kept (default: anything but undefined). */
  cacheable?: (value: V) => boolean;
  /** Called once per lookup with its outcome (a metric). */
  onOutcome?: (outcome: CacheOutcome) => void;
  /**
   * An entry older than this is read again (default 10 s): the bound on staleness when an
   * invalidation was lost on the way (a writer's NATS connection dropped after its commit,
   * a route between NATS servers down), which nothing else would ever notice.
   */
  maxAgeMs?: number;
  /**
   * How long a lookup waits for the NATS round trip before it reads without the cache
   * (default 1 s): a half-open NATS connection must not hold requests.
   */
  barrierTimeoutMs?: number;
}

/**
 * A process's cache of values read from a database, with invalidation across replicas
 * over core NATS (the mechanism of the edge's API-key cache and of operations' pricing
 * cache; docs/architecture.md).
 *
 * A change (`invalidateAll`, after it committed) publishes on the subject and waits for
 * the NATS server to have it (a flush) before the admin call answers. A cached value is
 * served only after a NATS round trip (PING/PONG) that started after the lookup began:
 * the server sends a connection its messages in order, so by the PONG every invalidation
 * published before the lookup, by any process, has been applied here. Concurrent lookups
 * share one round trip. A lookup that an invalidation overtook stores nothing (a
 * generation counter).
 *
 * While NATS is disconnected the cache is not used (every lookup calls `load`), and it is
 * emptied when the connection comes back, since invalidations may have been missed
 * meanwhile. A round trip that does not come back within `barrierTimeoutMs` (a half-open
 * connection) makes that lookup call `load`, and an entry older than `maxAgeMs` is read
 * again: the bound on staleness when an invalidation was lost on the way. The ordering holds on one NATS server; across a NATS cluster an
 * invalidation reaches the other servers' clients asynchronously.
 */
export class InvalidatedCache<V> {
  readonly #nc: Nats["nc"];
  readonly #subject: string;
  readonly #logger: Logger;
  readonly #what: string;
  readonly #maxEntries: number;
  readonly #cacheable: (value: V) => boolean;
  readonly #onOutcome: (outcome: CacheOutcome) => void;
  readonly #maxAgeMs: number;
  readonly #barrierTimeoutMs: number;
  readonly #entries = new Map<string, { value: V; storedAt: number }>();
  /** Bumped by every invalidation: a lookup that started before one does not store its answer. */
  #generation = 0;
  /** False until `start` has subscribed (and while NATS is disconnected): lookups bypass the cache. */
  #connected = false;
  #flushing: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #sub: ReturnType<Nats["nc"]["subscribe"]> | undefined;

  constructor(nc: Nats["nc"], options: InvalidatedCacheOptions<V>) {
    this.#nc = nc;
    this.#subject = options.subject;
    this.#logger = options.logger;
    this.#what = options.what;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#cacheable = options.cacheable ?? ((value) => value !== undefined);
    this.#onOutcome = options.onOutcome ?? (() => {});
    this.#maxAgeMs = options.maxAgeMs ?? 10_000;
    this.#barrierTimeoutMs = options.barrierTimeoutMs ?? 1_000;
  }

  /** Subscribes to invalidations and follows the connection's state. */
  async start(): Promise<void> {
    // A callback subscription runs as the message is parsed, before any later PONG resolves.
    this.#sub = this.#nc.subscribe(this.#subject, { callback: () => this.#clear() });
    await this.#nc.flush();
    this.#connected = true;
    void (async () => {
      for await (const s of this.#nc.status()) {
        if (s.type === "disconnect" || s.type === "reconnecting" || s.type === "staleConnection") {
          this.#connected = false;
          this.#clear();
        } else if (s.type === "reconnect") {
          this.#clear();
          this.#connected = true;
        }
      }
    })();
  }

  /** Unsubscribes; lookups from now on bypass the cache (no invalidation would reach it). */
  stop(): void {
    this.#connected = false;
    this.#sub?.unsubscribe();
    this.#clear();
  }

  /**
   * A NATS round trip that starts now, for a caller that will look a key up after other
   * work (a create starts it before its database read, so the two overlap); undefined
   * while the cache is unusable. Its rejection is handled here: a caller that never gets
   * to `get` leaves nothing unhandled.
   */
  barrier(): Promise<void> | undefined {
    if (!this.#usable()) return undefined;
    const round = this.#barrier();
    round.catch(() => {});
    return round;
  }

  /**
   * The value of a key: cached (after the barrier) or from `load`, which it then caches.
   * `barrier` is one from `barrier()` that the caller started after its request began;
   * without it the lookup starts its own.
   */
  async get(key: string, load: () => Promise<V>, barrier?: Promise<void>): Promise<V> {
    if (!this.#usable()) {
      this.#onOutcome("bypass");
      return load();
    }
    const found = await this.#cached(key, barrier);
    if (found === "unreachable") {
      this.#onOutcome("bypass");
      return load();
    }
    if (found) return found.value;
    this.#onOutcome("miss");
    const generation = this.#generation;
    const storedAt = Date.now();
    const value = await load();
    if (this.#cacheable(value) && generation === this.#generation && this.#usable()) {
      this.#entries.delete(key);
      if (this.#entries.size >= this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(key, { value, storedAt });
    }
    return value;
  }

  /**
   * The value of a key when it is cached (served after the barrier, as `get` serves it),
   * else undefined: it never calls a loader, for a caller that has another way on without
   * the value and must not wait on the source first.
   */
  async peek(key: string, barrier?: Promise<void>): Promise<{ value: V } | undefined> {
    if (!this.#usable()) return undefined;
    const found = await this.#cached(key, barrier);
    return found === "unreachable" ? undefined : found;
  }

  /**
   * Empties this process's cache alone, for a caller that found an entry stale by other
   * means (a version the database no longer has): its invalidation was lost or is late.
   */
  forget(): void {
    this.#clear();
  }

  /**
   * The fresh entry of `key` once a round trip that started after the lookup began has come
   * back (counted a hit); undefined when there is none; "unreachable" when the round trip
   * failed.
   */
  async #cached(key: string, barrier?: Promise<void>): Promise<{ value: V } | undefined | "unreachable"> {
    if (!this.#fresh(key)) return undefined;
    try {
      await (barrier ?? this.#barrier());
    } catch (err) {
      this.#logger.warn({ err }, `NATS barrier failed; ${this.#what} read without the cache`);
      return "unreachable";
    }
    const entry = this.#fresh(key);
    if (!entry || !this.#usable()) return undefined;
    this.#onOutcome("hit");
    return entry;
  }

  /** The entry of `key` unless it is older than `maxAgeMs` (then it is dropped). */
  #fresh(key: string): { value: V; storedAt: number } | undefined {
    const entry = this.#entries.get(key);
    if (entry && Date.now() - entry.storedAt > this.#maxAgeMs) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /**
   * Empties every process's cache (changes are rare, so it names no key) and resolves
   * once the NATS server has the message; call it after the change committed.
   */
  async invalidateAll(): Promise<void> {
    this.#clear();
    await publishInvalidation(this.#nc, this.#subject);
  }

  #usable(): boolean {
    return this.#connected && !this.#nc.isClosed();
  }

  #clear(): void {
    this.#generation++;
    this.#entries.clear();
  }

  /**
   * Resolves after a NATS round trip that started after this call; concurrent callers
   * share one, and its timeout (a rejection after `barrierTimeoutMs`: a connection that
   * stopped answering).
   */
  #barrier(): Promise<void> {
    if (this.#flushing === undefined) {
      this.#flushing = this.#roundTrip().finally(() => {
        this.#flushing = undefined;
      });
      return this.#flushing;
    }
    // The round trip in flight started before this lookup: wait for the next one.
    this.#queued ??= this.#flushing.then(
      () => {
        this.#queued = undefined;
        return this.#barrier();
      },
      () => {
        this.#queued = undefined;
        return this.#barrier();
      },
    );
    return this.#queued;
  }

  /** One PING/PONG, or a rejection after `barrierTimeoutMs`. */
  #roundTrip(): Promise<void> {
    const ms = this.#barrierTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no NATS round trip within ${ms} ms`)), ms);
    });
    return Promise.race([this.#nc.flush(), timeout]).finally(() => clearTimeout(timer));
  }
}

/**
 * Publishes an invalidation on a cache's subject and resolves once the NATS server has it;
 * for a writer that keeps no cache itself (the ledger for operations' pricing cache).
 */
export async function publishInvalidation(nc: Nats["nc"], subject: string): Promise<void> {
  nc.publish(subject);
  await nc.flush();
}

/**
 * The subject the ledger publishes on after every committed pricing-tier or FX-rate
 * write, which operations' pricing cache invalidates on; outside the events stream.
 */
export const pricingInvalidationSubject = (prefix: string) => `ledger-pricing.${prefix}`;
