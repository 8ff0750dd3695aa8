import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { inboxRetention, resolvedDeadLetterRetention } from "@gw/db";
import {
  CONSUMER_SUBJECTS,
  DeadLetterHandlers,
  type EventApplier,
  EventHealthHandlers,
  pricingInvalidationSubject,
  publishInvalidation,
  type RunningConsumer,
  runConsumer,
} from "@gw/events";
import { DeadLetterService } from "@gw/proto/gateway/deadletters/v1/dead_letters_pb";
import { EventHealthService } from "@gw/proto/gateway/events/v1/event_health_pb";
import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { type OperationEvent, OperationEventSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { type GrpcServiceConfig, startGrpcService } from "@gw/runtime";
import { applyOperationEvent } from "./events.ts";
import { LedgerHandlers } from "./service.ts";
import { startSuspenseConsumer, suspenseApplier } from "./suspense.ts";

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
    serviceNames: [LedgerService.typeName, DeadLetterService.typeName, EventHealthService.typeName],
    config,
    setup: ({ sql, nats, logger, retry }) => {
      let consumer: RunningConsumer | undefined;
      // The consumer's decode and handle, shared by the runner and an operator's retry of a dead letter.
      const postings: EventApplier<OperationEvent> = {
        durable: CONSUMER,
        decode: (data) => fromBinary(OperationEventSchema, data),
        handle: (tx, event) => applyOperationEvent(tx, event, logger),
      };
      const deadLetters = new DeadLetterHandlers({
        service: "ledger",
        sql,
        schema: "ledger",
        consumers: [postings, suspenseApplier],
      });
      let facts: RunningConsumer | undefined;
      return {
        // Consumed-event ids and resolved dead letters (docs/operations.md, "Retention").
        retention: [inboxRetention("ledger"), resolvedDeadLetterRetention("ledger")],
        routes: (router) => {
          router.service(
            LedgerService,
            new LedgerHandlers(sql, logger, () =>
              publishInvalidation(nats.nc, pricingInvalidationSubject(config.EVENTS_PREFIX)),
            ),
          );
          router.service(DeadLetterService, deadLetters);
          router.service(
            EventHealthService,
            new EventHealthHandlers({
              service: "ledger",
              sql,
              outboxSchema: "ledger",
              nats,
              prefix: config.EVENTS_PREFIX,
              durables: [postings.durable, suspenseApplier.durable],
            }),
          );
        },
        async start() {
          consumer = await runConsumer({
            ...postings,
            nats,
            prefix: config.EVENTS_PREFIX,
            subjects: [...CONSUMER_SUBJECTS.ledger],
            sql,
            schema: "ledger",
            logger,
            retry,
            // One posting per transaction: a batch would keep one event's account locks
            // while the next takes a payout's reserve row, the order ReservePayout and
            // ReleaseRefusedPayout take them in reverse (a deadlock Postgres breaks after
            // a second, on the payout create's path).
            maxBatch: 1,
          });
          facts = await startSuspenseConsumer({ nats, prefix: config.EVENTS_PREFIX, sql, logger, retry });
        },
        async stop() {
          await facts?.stop();
          await consumer?.stop();
        },
      };
    },
  });
}
