import { InvalidatedCache, type Nats } from "@gw/events";
import type { Logger } from "@gw/log";
import { metricsRegistry } from "@gw/rpc";
import { Counter } from "prom-client";
import type { Scope } from "./env.ts";

const lookups = new Counter({
  name: "edge_api_key_cache_total",
  help: "API key lookups by outcome: hit (served from the cache after the NATS barrier), miss (read from Postgres), bypass (cache unusable: NATS down).",
  labelNames: ["outcome"],
  registers: [metricsRegistry],
});

/** Keys remembered at most; past it the oldest entry goes. */
const MAX_ENTRIES = 10_000;

/** The subject the edge replicas of one stack invalidate on; outside the events stream (`<prefix>.>`). */
export const keyInvalidationSubject = (prefix: string) => `edge-api-keys.${prefix}`;

/**
 * The scopes of live API keys, kept by each edge replica so a request costs no Postgres
 * round trip for its key, with invalidation across replicas over core NATS: the
 * mechanism is `InvalidatedCache` (libs/events), which says how a change is seen by the
 * very next request and what happens while NATS is down.
 *
 * A revocation (`invalidateAll`) publishes on the stack's subject and waits for the NATS
 * server to have it before the admin call answers, so a revoked key gets 401 on the very
 * next request on every replica. Only live keys are cached (an unknown key always asks
 * Postgres, so a new key works at once), and a lookup that an invalidation overtook
 * stores nothing.
 */
export class KeyCache {
  readonly #cache: InvalidatedCache<Scope | undefined>;

  constructor(nc: Nats["nc"], prefix: string, logger: Logger) {
    this.#cache = new InvalidatedCache<Scope | undefined>(nc, {
      subject: keyInvalidationSubject(prefix),
      logger,
      what: "API key",
      maxEntries: MAX_ENTRIES,
      onOutcome: (outcome) => lookups.inc({ outcome }),
    });
  }

  /** Subscribes to invalidations and follows the connection's state. */
  start(): Promise<void> {
    return this.#cache.start();
  }

  stop(): void {
    this.#cache.stop();
  }

  /** The scope of a key hash: cached (after the barrier) or from `load`, which it then caches. */
  scopeOf(keyHash: string, load: () => Promise<Scope | undefined>): Promise<Scope | undefined> {
    return this.#cache.get(keyHash, load);
  }

  /** Empties every replica's cache and resolves once the NATS server has the message. */
  invalidateAll(): Promise<void> {
    return this.#cache.invalidateAll();
  }
}
