import { fileURLToPath } from "node:url";
import { EventHealthHandlers, OutboxRelay } from "@gw/events";
import { EventHealthService } from "@gw/proto/gateway/events/v1/event_health_pb";
import { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import { startGrpcService } from "@gw/runtime";
import type { MatchingConfig } from "./config.ts";
import { reportPoolDepth } from "./metrics.ts";
import { PoolStore } from "./pool.ts";
import { PoolReads, ReadLimiter } from "./reads.ts";
import { MATCHING_RETENTION } from "./retention.ts";
import { MatchingHandlers } from "./service.ts";
import { PoolSweeper } from "./sweeper.ts";

export const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

/** Builds and starts the matching service; `main.ts` and the tests both call this. */
export function startMatching(config: MatchingConfig) {
  return startGrpcService({
    name: "matching",
    schema: "matching",
    migrationsFolder,
    serviceNames: [MatchingService.typeName, EventHealthService.typeName],
    config,
    setup: ({ sql, nats, logger }) => {
      const store = new PoolStore(sql, config.EVENTS_PREFIX);
      reportPoolDepth(sql);
      // One limiter per process: the spec's one active read per replica.
      const reads = new PoolReads(store, new ReadLimiter(), config.READ_BUDGET_MS);
      const relay = new OutboxRelay({ sql, schema: "matching", js: nats.js, logger });
      const sweeper = new PoolSweeper(store, logger, config.POOL_SWEEP_INTERVAL_MS);
      return {
        retention: MATCHING_RETENTION,
        routes: (router) => {
          router.service(MatchingService, new MatchingHandlers(store, reads));
          // Its outbox only: matching has no consumers.
          router.service(
            EventHealthService,
            new EventHealthHandlers({
              service: "matching",
              sql,
              outboxSchema: "matching",
              nats,
              prefix: config.EVENTS_PREFIX,
              durables: [],
            }),
          );
        },
        start: async () => {
          await relay.start();
          sweeper.start();
        },
        stop: async () => {
          await sweeper.stop();
          await relay.stop();
        },
      };
    },
  });
}
