import { eventHeaders } from "@gw/events";
import type { Db } from "./db.ts";

/**
 * Queues an event in `tx` besides the one a lifecycle write queues with its own statement
 * (a provider fact's, a refused payout's): the outbox relay publishes it after commit.
 */
export async function enqueueEvent(tx: Db, id: string, subject: string, payload: Uint8Array): Promise<void> {
  await tx`
    insert into operations.outbox (id, subject, payload, headers)
    values (${id}, ${subject}, ${Buffer.from(payload)}, ${JSON.stringify(eventHeaders())}::jsonb)`;
  await tx`select pg_notify('outbox_operations', '')`;
}
