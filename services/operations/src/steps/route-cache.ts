import { InvalidatedCache, type Nats } from "@gw/events";
import type { Logger } from "@gw/log";
import { metricsRegistry } from "@gw/rpc";
import { Counter } from "prom-client";
import type { OperationStore, RouteWithProviders } from "../repository/operations.ts";

const lookups = new Counter({
  name: "operations_route_cache_total",
  help: "Route lookups of creates by outcome: hit (served from the cache after the NATS barrier), miss (read from the database), bypass (cache unusable: NATS down); stale: a claim found the routing configuration's version changed under a cached route (an invalidation lost or late), and the replica forgot its routes.",
  labelNames: ["outcome"],
  registers: [metricsRegistry],
});

/** The core-NATS subject operations' replicas invalidate their route caches on. */
export const routesInvalidationSubject = (prefix: string) => `operations-routes.${prefix}`;

/**
 * A create's route with its providers' configs, per (shop, method, direction), kept in an
 * `InvalidatedCache`. Correctness does not rest on the cache: a create claims by a cached
 * route only while the routing configuration is still at the version the route was read at
 * (`operations.config_version`, raised by a trigger on every write to routes or providers,
 * checked inside the claim: `OperationStore.claim`), so a lost or late invalidation, a NATS
 * cluster's delay or SQL written by hand can cost a read, never a create routed by a
 * configuration changed before it began. The invalidation keeps the hits coming: the admin
 * writes (`putRoute`, `putProvider`, in any replica) publish on `operations-routes.<prefix>`
 * once committed, and a cached route is served only after a NATS round trip that started
 * after the create began. A shop without a route is not cached: the create takes the read
 * path, which answers `route_not_configured` or a replay.
 */
export class RouteCache {
  readonly #store: OperationStore;
  readonly #cache: InvalidatedCache<RouteWithProviders | undefined>;

  constructor(store: OperationStore, nc: Nats["nc"], prefix: string, logger: Logger) {
    this.#store = store;
    this.#cache = new InvalidatedCache(nc, {
      subject: routesInvalidationSubject(prefix),
      logger,
      what: "routes",
      onOutcome: (outcome) => lookups.inc({ outcome }),
    });
  }

  start(): Promise<void> {
    return this.#cache.start();
  }

  stop(): void {
    this.#cache.stop();
  }

  /**
   * A NATS round trip that starts now; it serves this cache and every other one on the
   * same connection (the pricing cache), since by its PONG every invalidation published
   * before it has been applied to all of them.
   */
  barrier(): Promise<void> | undefined {
    return this.#cache.barrier();
  }

  get(
    shopId: string,
    method: string,
    direction: "payin" | "payout",
    barrier?: Promise<void>,
  ): Promise<RouteWithProviders | undefined> {
    return this.#cache.get(
      `${shopId}\u0000${method}\u0000${direction}`,
      () => this.#store.routeWithProviders(shopId, method, direction),
      barrier,
    );
  }

  /** This replica reads its routes again: a claim found the configuration's version changed. */
  forget(): void {
    lookups.inc({ outcome: "stale" });
    this.#cache.forget();
  }

  /** After a committed route or provider write: every replica reads its routes again. */
  invalidateAll(): Promise<void> {
    return this.#cache.invalidateAll();
  }
}
