import { Webhook, WebhookVerificationError } from "standardwebhooks";
import type { OperationState } from "./types.ts";

/** The event types the gateway delivers (`pending` is never sent). */
export const WEBHOOK_EVENT_TYPES = [
  "payment.awaiting_confirmation",
  "payment.completed",
  "payment.rejected",
  "payment.cancelled",
  "payment.manual_check",
  "payout.completed",
  "payout.rejected",
] as const;
/** One of the delivered event types. */
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * A verified webhook. `id` is stable across the gateway's retries of one event, so it is
 * the key to process an event once; `data` is the operation as `getOperationState` shows
 * it at the time of the event.
 */
export interface WebhookEvent<T extends WebhookEventType = WebhookEventType> {
  id: string;
  type: T;
  created_at: string;
  data: OperationState;
}

/** The webhook failed verification: bad signature, stale or future timestamp, or a body that is no event. */
export class WebhookRejectedError extends Error {
  override readonly name = "WebhookRejectedError";
}

export interface WebhookVerifierOptions {
  /**
   * How far `webhook-timestamp` may be from now, in seconds, before the delivery is
   * refused as a replay (default and upper bound 300: standardwebhooks itself refuses
   * anything older or newer than five minutes).
   */
  toleranceSeconds?: number;
  /** The clock, in milliseconds; for tests. */
  now?: () => number;
}

/** Headers as Node (`IncomingHttpHeaders`), the Fetch API (`Headers`) or a plain record give them. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

/**
 * Verifies the gateway's Standard-Webhooks-signed deliveries with the shop's signing
 * secret (`whsec_...`) and parses them into typed events. Pass the body exactly as
 * received (the raw bytes or string, before any JSON parsing): the signature covers it.
 */
export class WebhookVerifier {
  readonly #webhook: Webhook;
  readonly #toleranceSeconds: number;
  readonly #now: () => number;

  constructor(secret: string, options: WebhookVerifierOptions = {}) {
    this.#webhook = new Webhook(secret);
    this.#toleranceSeconds = Math.min(options.toleranceSeconds ?? 300, 300);
    this.#now = options.now ?? Date.now;
  }

  /** The event of a delivery; throws `WebhookRejectedError` when it is not genuine, fresh and well formed. */
  verify(payload: string | Uint8Array, headers: HeadersLike): WebhookEvent {
    const flat = flatten(headers);
    const timestamp = Number(flat["webhook-timestamp"]);
    if (!Number.isInteger(timestamp))
      throw new WebhookRejectedError("webhook-timestamp is missing or not a number");
    if (Math.abs(this.#now() / 1000 - timestamp) > this.#toleranceSeconds) {
      throw new WebhookRejectedError(
        `webhook-timestamp is more than ${this.#toleranceSeconds} s from now: refused as a possible replay`,
      );
    }
    let body: unknown;
    try {
      const text = typeof payload === "string" ? payload : new TextDecoder().decode(payload);
      body = this.#webhook.verify(text, flat);
    } catch (err) {
      if (err instanceof WebhookVerificationError)
        throw new WebhookRejectedError(err.message, { cause: err });
      throw new WebhookRejectedError("the body is not JSON", { cause: err });
    }
    return asEvent(body, flat["webhook-id"]);
  }
}

function flatten(headers: HeadersLike): Record<string, string> {
  const flat: Record<string, string> = {};
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  for (const [name, value] of entries) {
    if (value === undefined) continue;
    flat[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  }
  return flat;
}

function asEvent(body: unknown, webhookId: string | undefined): WebhookEvent {
  const event = body as Partial<WebhookEvent> | null;
  if (
    !event ||
    typeof event.id !== "string" ||
    typeof event.created_at !== "string" ||
    !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(event.type as string) ||
    typeof event.data !== "object" ||
    event.data === null
  ) {
    throw new WebhookRejectedError("the body is not a gateway event");
  }
  // The signed id and the body's id are one: a body replayed under another id is refused.
  if (event.id !== webhookId) throw new WebhookRejectedError("webhook-id and the event id differ");
  return event as WebhookEvent;
}

/** Narrows an event to one type, typed. */
export function isEventOf<T extends WebhookEventType>(
  event: WebhookEvent,
  type: T,
): event is WebhookEvent<T> {
  return event.type === type;
}
