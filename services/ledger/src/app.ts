import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { type RunningConsumer, runConsumer } from "@gw/events";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { OperationEventSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { type GrpcServiceConfig, startGrpcService } from "@gw/runtime";
import { applyOperationEvent } from "./events.ts";
import { LedgerHandlers } from "./service.ts";
import { startSuspenseConsumer } from "./suspense.ts";

export const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

/** The durable consumer name; also the key of the ledger's rows in its inbox. */
export const CONSUMER = "ledger";

/**
 * Builds and starts the ledger: the gRPC service, and the durable consumer that posts
 * operation events. `main.ts` and the tests both call this.
 */
export function startLedger(config: GrpcServiceConfig) {
  return startGrpcService({
    name: "ledger",
    schema: "ledger",
    migrationsFolder,
    serviceNames: [LedgerService.typeName],
    config,
    setup: ({ sql, nats, logger }) => {
      let consumer: RunningConsumer | undefined;
      let facts: RunningConsumer | undefined;
      return {
        routes: (router) => router.service(LedgerService, new LedgerHandlers(sql, logger)),
        async start() {
          consumer = await runConsumer({
            nats,
            prefix: config.EVENTS_PREFIX,
            durable: CONSUMER,
            subjects: ["operations.>"],
            sql,
            schema: "ledger",
            decode: (data) => fromBinary(OperationEventSchema, data),
            handle: (tx, event) => applyOperationEvent(tx, event, logger),
            logger,
          });
          facts = await startSuspenseConsumer({ nats, prefix: config.EVENTS_PREFIX, sql, logger });
        },
        async stop() {
          await facts?.stop();
          await consumer?.stop();
        },
      };
    },
  });
}
