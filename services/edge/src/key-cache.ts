import type { Nats } from "@gw/events";
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
 * round trip for its key, with invalidation across replicas over core NATS.
 *
 * A revocation (`invalidateAll`) publishes on the stack's subject and waits for the NATS
 * server to have it (a flush) before the admin call answers. A cached scope is served
 * only after a NATS round trip (PING/PONG) that started after the request arrived: the
 * server sends a connection its messages in order, so by the PONG every invalidation
 * published before the request, by any replica, has been applied here. A revoked key
 * thus gets 401 on the very next request on every replica. Concurrent requests share one
 * round trip. Only live keys are cached (an unknown key always asks Postgres, so a new
 * key works at once), and a lookup that an invalidation overtook stores nothing.
 *
 * While NATS is disconnected the cache is not used (every request asks Postgres), and
 * it is emptied when the connection comes back, since invalidations may have been
 * missed meanwhile. The ordering holds on one NATS server; across a NATS cluster a
 * revocation reaches the other servers' clients asynchronously (docs/architecture.md).
 */
export class KeyCache {
  readonly #nc: Nats["nc"];
  readonly #subject: string;
  readonly #logger: Logger;
  readonly #entries = new Map<string, Scope>();
  /** Bumped by every invalidation: a lookup that started before one does not store its answer. */
  #generation = 0;
  #connected = true;
  #flushing: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #sub: ReturnType<Nats["nc"]["subscribe"]> | undefined;

  constructor(nc: Nats["nc"], prefix: string, logger: Logger) {
    this.#nc = nc;
    this.#subject = keyInvalidationSubject(prefix);
    this.#logger = logger;
  }

  /** Subscribes to invalidations and follows the connection's state. */
  async start(): Promise<void> {
    // A callback subscription runs as the message is parsed, before any later PONG resolves.
    this.#sub = this.#nc.subscribe(this.#subject, { callback: () => this.#clear() });
    await this.#nc.flush();
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

  stop(): void {
    this.#sub?.unsubscribe();
    this.#clear();
  }

  /** The scope of a key hash: cached (after the barrier) or from `load`, which it then caches. */
  async scopeOf(keyHash: string, load: () => Promise<Scope | undefined>): Promise<Scope | undefined> {
    if (!this.#usable()) {
      lookups.inc({ outcome: "bypass" });
      return load();
    }
    if (this.#entries.has(keyHash)) {
      try {
        await this.#barrier();
      } catch (err) {
        this.#logger.warn({ err }, "NATS barrier failed; API key read from Postgres");
        lookups.inc({ outcome: "bypass" });
        return load();
      }
      const scope = this.#entries.get(keyHash);
      if (scope !== undefined && this.#usable()) {
        lookups.inc({ outcome: "hit" });
        return scope;
      }
    }
    lookups.inc({ outcome: "miss" });
    const generation = this.#generation;
    const scope = await load();
    if (scope !== undefined && generation === this.#generation && this.#usable()) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(keyHash, scope);
    }
    return scope;
  }

  /**
   * Empties every replica's cache (revocations are rare, so it names no key) and
   * resolves once the NATS server has the message; call it after the change committed.
   */
  async invalidateAll(): Promise<void> {
    this.#clear();
    this.#nc.publish(this.#subject);
    await this.#nc.flush();
  }

  #usable(): boolean {
    return this.#connected && !this.#nc.isClosed();
  }

  #clear(): void {
    this.#generation++;
    this.#entries.clear();
  }

  /** Resolves after a NATS round trip that started after this call; concurrent callers share one. */
  #barrier(): Promise<void> {
    if (this.#flushing === undefined) {
      this.#flushing = this.#nc.flush().finally(() => {
        this.#flushing = undefined;
      });
      return this.#flushing;
    }
    // The round trip in flight started before this request: wait for the next one.
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
}
