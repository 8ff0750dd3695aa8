// @gw/sdk: the payment gateway's merchant API for TypeScript.
export { type ConfirmPaymentRequest, GatewayClient, type GatewayClientOptions } from "./client.ts";
export { GatewayError, GatewayUnreachableError, isGatewayError, REFUSAL_CODES } from "./errors.ts";
export type { components, paths } from "./gen/schema.ts";
export { DEFAULT_RETRY, type RetryClass, type RetryPolicy, retryClassOf } from "./retry.ts";
export * from "./types.ts";
export {
  type HeadersLike,
  isEventOf,
  WEBHOOK_EVENT_TYPES,
  type WebhookEvent,
  type WebhookEventType,
  WebhookRejectedError,
  WebhookVerifier,
  type WebhookVerifierOptions,
} from "./webhooks.ts";
