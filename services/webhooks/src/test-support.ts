import { randomUUID } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import type { Nats } from "@gw/events";
import {
  type OperationEvent,
  OperationEventSchema,
  type ReceiptItem,
} from "@gw/proto/gateway/operations/v1/operations_pb";

/** One request a test receiver got. */
export interface ReceivedWebhook {
  headers: Record<string, string>;
  body: string;
}

/**
 * A merchant's webhook receiver for tests: a real HTTP server on a free loopback port.
 * `respond` picks the status of each request (by its 1-based number), and can hold the
 * answer back by returning a promise; `down()` stops
 * listening (connections are refused, like a merchant that is offline) and `up()`
 * listens again on the same port.
 */
export async function startReceiver(respond: (n: number) => number | Promise<number> = () => 200) {
  const received: ReceivedWebhook[] = [];
  let answer = respond;
  let port = 0;
  let server: Server | undefined;
  const flat = (h: IncomingHttpHeaders) =>
    Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : (v ?? "")]));
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          received.push({ headers: flat(req.headers), body: Buffer.concat(chunks).toString("utf8") });
          void Promise.resolve(answer(received.length)).then((status) => res.writeHead(status).end());
        });
      });
      s.once("error", reject);
      s.listen(port, "127.0.0.1", () => {
        port = (s.address() as AddressInfo).port;
        server = s;
        resolve();
      });
    });
  await listen();
  return {
    received,
    get url() {
      return `http://127.0.0.1:${port}/hooks`;
    },
    setRespond(fn: (n: number) => number | Promise<number>) {
      answer = fn;
    },
    async down() {
      const s = server;
      server = undefined;
      if (!s) return;
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    },
    up: listen,
  };
}

/** Builds an operation event; every field a test does not care about gets a plausible value. */
export function operationEvent(o: {
  shopId: string;
  operationId?: string;
  version?: number;
  type?: string;
  receipts?: Partial<ReceiptItem>[];
  eventId?: string;
}): OperationEvent {
  const type = o.type ?? "payment.completed";
  const [opType, status] = type.split(".") as [string, string];
  const now = new Date().toISOString();
  return create(OperationEventSchema, {
    eventId: o.eventId ?? randomUUID(),
    type,
    occurredAt: now,
    scope: { merchantId: randomUUID(), shopId: o.shopId },
    operation: {
      operationId: o.operationId ?? randomUUID(),
      merchantOperationId: `m-${randomUUID()}`,
      type: opType,
      status,
      method: "card",
      expectedAmount: "1500.00",
      actualAmount: status === "completed" ? "1500.00" : "0.00",
      currency: "RUB",
      createdAt: now,
      updatedAt: now,
      version: BigInt(o.version ?? 1),
    },
    receipts: (o.receipts ?? []).map((r) => ({
      id: randomUUID(),
      amount: "1500.00",
      completedAt: now,
      ...r,
    })),
  });
}

/** Publishes an event as the operations relay does, its event id as the Nats-Msg-Id unless told otherwise. */
export async function publishEvent(nats: Nats, prefix: string, event: OperationEvent, msgId = event.eventId) {
  await nats.js.publish(`${prefix}.operations.${event.type}`, toBinary(OperationEventSchema, event), {
    msgID: msgId,
  });
}

/** Polls until `check` returns a value other than undefined/false, or fails after the deadline. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
