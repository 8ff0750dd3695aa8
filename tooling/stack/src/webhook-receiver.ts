import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

/** One delivery as the receiver saw it. */
export interface ReceivedWebhook {
  /** The `webhook-id` header: the event id, the same on every retry of one event. */
  id: string;
  receivedAt: string;
  /** True when the Standard Webhooks signature checked out with the shop's secret. */
  verified: boolean;
  /** Why verification failed, when it did. */
  error?: string;
  body: unknown;
  /** The body and headers exactly as received, for a test's own verification. */
  raw: string;
  headers: Record<string, string>;
}

export interface WebhookReceiverOptions {
  port?: number;
  host?: string;
  /** The shop's signing secret, asked at every delivery (it can be set after start). */
  secret: () => string | undefined;
  /** Status to answer with; a test can answer 500 to make the gateway retry. */
  status?: (hook: ReceivedWebhook) => number;
  onWebhook?: (hook: ReceivedWebhook) => void;
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  stop(): Promise<void>;
}

const MAX_BODY_BYTES = 1024 * 1024;

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error("body too large");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * A tiny merchant: takes webhooks at `POST /webhooks`, verifies their Standard Webhooks
 * signature, keeps them in memory, and lists them at `GET /webhooks` (newest last), so
 * the local walk-through can show what the gateway delivered.
 */
export async function startWebhookReceiver(options: WebhookReceiverOptions): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const server: Server = createServer(async (req, res) => {
    if (req.url !== "/webhooks") {
      res.writeHead(404).end();
      return;
    }
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" }).end(
        `${JSON.stringify(
          received.map(({ raw, headers, ...shown }) => shown),
          null,
          2,
        )}\n`,
      );
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    let raw: Buffer;
    try {
      raw = await readBody(req);
    } catch {
      res.writeHead(413).end();
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
    const hook: ReceivedWebhook = {
      id: headers["webhook-id"] ?? "",
      receivedAt: new Date().toISOString(),
      verified: false,
      body: undefined,
      raw: raw.toString("utf8"),
      headers,
    };
    try {
      hook.body = JSON.parse(raw.toString("utf8"));
    } catch {
      hook.body = raw.toString("utf8");
    }
    const secret = options.secret();
    if (!secret) {
      hook.error = "no signing secret known to the receiver";
    } else {
      try {
        new Webhook(secret).verify(raw, headers);
        hook.verified = true;
      } catch (err) {
        hook.error = err instanceof Error ? err.message : String(err);
      }
    }
    received.push(hook);
    options.onWebhook?.(hook);
    const status = options.status?.(hook) ?? (hook.verified ? 204 : 400);
    res.writeHead(status).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    received,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
