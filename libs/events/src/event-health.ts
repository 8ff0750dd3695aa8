import type { ServiceImpl } from "@connectrpc/connect";
import type { Sql } from "@gw/db";
import type { EventHealthService, GetEventHealthRequest } from "@gw/proto/gateway/events/v1/event_health_pb";
import { type Nats, streamName } from "./nats.ts";

/** The most unpublished outbox ids one answer lists, and its default. */
const MAX_IDS = 100;

export interface EventHealthOptions {
  service: string;
  sql: Sql;
  /** The schema whose `outbox` the service's relay publishes; absent without one. */
  outboxSchema?: string | undefined;
  nats: Nats;
  prefix: string;
  /** Its durable consumers' names. */
  durables: readonly string[];
}

/**
 * The EventHealthService of one service process: its outbox (events not yet published)
 * and its durable consumers as JetStream counts them (events not yet given to the
 * consumer, and given but not yet acknowledged). Once the stack is quiet every figure
 * but the totals is zero; an event a consumer gave up on is acknowledged and on the
 * service's dead letters instead.
 */
export class EventHealthHandlers implements ServiceImpl<typeof EventHealthService> {
  readonly #o: EventHealthOptions;

  constructor(options: EventHealthOptions) {
    this.#o = options;
  }

  async getEventHealth(req: GetEventHealthRequest) {
    const { sql, outboxSchema } = this.#o;
    const limit = req.limit > 0 ? Math.min(req.limit, MAX_IDS) : MAX_IDS;
    let outbox = { total: 0n, unpublished: 0n, ids: [] as string[] };
    if (outboxSchema) {
      const table = sql(outboxSchema);
      const [counts] = await sql<{ total: string; unpublished: string }[]>`
        select count(*)::text as total, count(*) filter (where published_at is null)::text as unpublished
        from ${table}.outbox`;
      const ids = await sql<{ id: string }[]>`
        select id::text from ${table}.outbox where published_at is null order by seq limit ${limit}`;
      outbox = {
        total: BigInt(counts?.total ?? "0"),
        unpublished: BigInt(counts?.unpublished ?? "0"),
        ids: ids.map((r) => r.id),
      };
    }
    const stream = streamName(this.#o.prefix);
    const consumers = await Promise.all(
      this.#o.durables.map(async (durable) => {
        const info = await this.#o.nats.jsm.consumers.info(stream, durable);
        return {
          durable,
          pending: BigInt(info.num_pending),
          ackPending: BigInt(info.num_ack_pending),
          delivered: BigInt(info.ack_floor.consumer_seq),
        };
      }),
    );
    return {
      service: this.#o.service,
      hasOutbox: outboxSchema !== undefined,
      outboxTotal: outbox.total,
      outboxUnpublished: outbox.unpublished,
      unpublishedEventIds: outbox.ids,
      consumers,
    };
  }
}
