import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { inboxRetention, resolvedDeadLetterRetention } from "@gw/db";
import {
  CONSUMER_SUBJECTS,
  DeadLetterHandlers,
  type EventApplier,
  EventHealthHandlers,
  type RunningConsumer,
  runConsumer,
} from "@gw/events";
import { DeadLetterService } from "@gw/proto/gateway/deadletters/v1/dead_letters_pb";
import { EventHealthService } from "@gw/proto/gateway/events/v1/event_health_pb";
import { type OperationEvent, OperationEventSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { WebhooksService } from "@gw/proto/gateway/webhooks/v1/webhooks_pb";
import { startGrpcService } from "@gw/runtime";
import type { WebhooksConfig } from "./config.ts";
import { DeliveryWorker } from "./delivery-worker.ts";
import { recordDelivery } from "./events.ts";
import { WebhooksHandlers } from "./service.ts";

/** Delivered webhooks stay in the delivery log this long (docs/operations.md, "Retention"). */
export const DELIVERED_KEEP_MS = 90 * 24 * 3_600_000;
export const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

/** Durable consumer name; also the key of this service's rows in its inbox. */
export const CONSUMER = "webhooks";

/**
 * Builds and starts the webhooks service: the admin RPCs, the durable consumer that
 * turns operation events into deliveries, and the delivery worker. `main.ts` and the
 * tests both call this.
 */
export function startWebhooks(config: WebhooksConfig) {
  return startGrpcService({
    name: "webhooks",
    schema: "webhooks",
    migrationsFolder,
    serviceNames: [WebhooksService.typeName, DeadLetterService.typeName, EventHealthService.typeName],
    config,
    setup: ({ db, sql, nats, logger, retry }) => {
      const worker = new DeliveryWorker({
        sql,
        logger,
        retryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE_MS,
        pollMs: config.WEBHOOK_POLL_MS,
        concurrency: config.WEBHOOK_CONCURRENCY,
        connectTimeoutMs: config.WEBHOOK_CONNECT_TIMEOUT_MS,
        headersTimeoutMs: config.WEBHOOK_HEADERS_TIMEOUT_MS,
        bodyTimeoutMs: config.WEBHOOK_BODY_TIMEOUT_MS,
        allowPrivateTargets: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      });
      const handlers = new WebhooksHandlers({
        db,
        logger,
        allowPrivateTargets: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
        retrySteps: config.WEBHOOK_RETRY_SCHEDULE_MS.length,
        secretGraceMs: config.WEBHOOK_SECRET_GRACE_MS,
      });
      let consumer: RunningConsumer | undefined;
      // The consumer's decode and handle, shared by the runner and an operator's retry of a dead letter.
      const deliveries: EventApplier<OperationEvent> = {
        durable: CONSUMER,
        decode: (data) => fromBinary(OperationEventSchema, data),
        handle: (tx, event, eventId) => recordDelivery(tx, event, eventId, logger),
      };
      const deadLetters = new DeadLetterHandlers({
        service: "webhooks",
        sql,
        schema: "webhooks",
        consumers: [deliveries],
      });
      return {
        // Consumed-event ids and resolved dead letters (docs/operations.md, "Retention").
        retention: [
          inboxRetention("webhooks"),
          resolvedDeadLetterRetention("webhooks"),
          // A delivered webhook's row (with its payload) is the admin delivery log's; the
          // inbox, not this row, keeps the event from being delivered twice.
          {
            table: "webhooks.deliveries",
            ageColumn: "delivered_at",
            keepMs: DELIVERED_KEEP_MS,
            where: "t.status = 'delivered'",
          },
        ],
        routes: (router) => {
          router.service(WebhooksService, handlers);
          router.service(DeadLetterService, deadLetters);
          router.service(
            EventHealthService,
            new EventHealthHandlers({
              service: "webhooks",
              sql,
              nats,
              prefix: config.EVENTS_PREFIX,
              durables: [deliveries.durable],
            }),
          );
        },
        async start() {
          await worker.start();
          consumer = await runConsumer({
            // One event at a time across all replicas: deliveries are recorded in stream
            // order, which is each operation's version order, so the worker's "earlier
            // version still pending" rule can hold webhooks in order per operation.
            maxAckPending: 1,
            ...deliveries,
            nats,
            prefix: config.EVENTS_PREFIX,
            subjects: [...CONSUMER_SUBJECTS.webhooks],
            sql,
            schema: "webhooks",
            retry,
            logFields: (event) => ({
              shop_id: event.scope?.shopId ?? "",
              operation_id: event.operation?.operationId ?? "",
            }),
            logger,
          });
        },
        async stop() {
          await consumer?.stop();
          await worker.stop();
        },
      };
    },
  });
}
