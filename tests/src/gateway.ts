import { randomBytes } from "node:crypto";
import { DEMO_PRICING } from "@gw/stack/provision";
import { startWebhookReceiver, type WebhookReceiver } from "@gw/stack/webhook-receiver";
import type { TestStack } from "./stack.ts";

/** An HTTP answer as a black-box test sees it: status, headers, the exact text and its JSON. */
export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: a test reads whatever JSON came back.
  json: any;
}

/**
 * Sends one request and returns the answer whatever its status (unlike `requestJson`,
 * which throws on anything but 2xx): tests of error cases need the status and the body.
 * `raw` sends text as is (malformed JSON, oversized bodies); `json` serialises a value.
 */
export async function send(
  method: string,
  url: string,
  options: {
    headers?: Record<string, string>;
    json?: unknown;
    raw?: string;
    contentType?: string;
    timeoutMs?: number;
  } = {},
): Promise<HttpAnswer> {
  const body = options.raw ?? (options.json === undefined ? undefined : JSON.stringify(options.json));
  const res = await fetch(url, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": options.contentType ?? "application/json" }),
      ...options.headers,
    },
    body,
    signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** A reference to an operation, as get_operation_state and cancel_operation take it. */
export type OperationRef = { operation_id: string } | { merchant_operation_id: string };

/**
 * The merchant API (`/v1`) with one shop's key, answering every status: what a
 * merchant's integration sends, and what it gets back byte for byte.
 */
export class MerchantApi {
  readonly #base: string;
  readonly #headers: Record<string, string>;
  /** The text of every answer this client got, for checks over everything a merchant saw. */
  readonly transcript: string[] = [];

  constructor(edgeUrl: string, apiKey: string) {
    this.#base = `${edgeUrl}/v1`;
    this.#headers = { "x-api-key": apiKey };
  }

  async #send(method: string, path: string, options: Parameters<typeof send>[2]) {
    const res = await send(method, `${this.#base}${path}`, { ...options, headers: this.#headers });
    this.transcript.push(res.text);
    return res;
  }

  /** POSTs a JSON value to a `/v1` path. */
  post(path: string, json: unknown): Promise<HttpAnswer> {
    return this.#send("POST", path, { json });
  }

  /** POSTs text as is, with a JSON content type unless told otherwise. */
  postRaw(path: string, raw: string, contentType?: string): Promise<HttpAnswer> {
    return this.#send("POST", path, { raw, contentType });
  }

  payment(body: Record<string, unknown>) {
    return this.post("/payment", body);
  }

  payout(body: Record<string, unknown>) {
    return this.post("/payout", body);
  }

  link(body: Record<string, unknown>) {
    return this.post("/payment/link", body);
  }

  state(ref: Record<string, unknown>) {
    return this.post("/get_operation_state", ref);
  }

  cancel(body: Record<string, unknown>) {
    return this.post("/cancel_operation", body);
  }

  balances() {
    return this.#send("GET", "/balances", {});
  }
}

/** A simulated provider's behaviour for one direction, as the sandbox's control API takes it. */
export interface SandboxBehaviour {
  mode: "accept" | "decline" | "no_answer";
  receipt_required?: boolean;
  expires_in_seconds?: number;
  delay_ms?: number;
  decline_reason?: string;
  /** How the provider answers a withdrawal (cancel, expiry); the sandbox's default is `supported`. */
  withdraw?: "supported" | "unsupported" | "failing";
  requisites?: { card_number?: string; phone?: string; bank_code?: string; holder_name?: string };
}

/** One route of a shop: providers in order for each direction, and the settlement currency. */
export interface RouteSpec {
  payin: string[];
  payout: string[];
  settlement_currency: string;
}

/** A shop set up by `Operator.newShop`, with its key, its merchant client and its receiver. */
export interface TestShop {
  merchantId: string;
  shopId: string;
  apiKey: string;
  api: MerchantApi;
  webhookSecret: string;
  receiver: WebhookReceiver;
}

/**
 * What an operator does through the admin API (`/admin/v1`) and a tester through the
 * sandbox's control API: providers with a chosen behaviour, shops with chosen routes,
 * FX rates, adjustments and the webhook delivery log. Every call must succeed (a
 * failure throws with the answer), except those that return the `HttpAnswer`.
 */
export class Operator {
  readonly #stack: TestStack;
  readonly #admin: string;
  readonly #headers: Record<string, string>;
  /** Every provider name registered through this operator, to check none leaks. */
  readonly providerNames: string[] = [];

  constructor(stack: TestStack) {
    this.#stack = stack;
    this.#admin = `${stack.urls.edge}/admin/v1`;
    this.#headers = { authorization: `Bearer ${stack.adminToken}` };
  }

  /** An admin call; returns the answer. */
  admin(method: string, path: string, json?: unknown): Promise<HttpAnswer> {
    return send(method, `${this.#admin}${path}`, { headers: this.#headers, json });
  }

  async #must(method: string, path: string, json?: unknown) {
    const res = await this.admin(method, path, json);
    if (res.status >= 300) throw new Error(`${method} /admin/v1${path} answered ${res.status}: ${res.text}`);
    return res.json;
  }

  /**
   * Registers a provider in the sandbox with the given behaviour and in the gateway with
   * the same credentials, for both methods. The name gets a random suffix so that a test
   * can look for it in responses; returns the full name.
   */
  async provider(
    prefix: string,
    behaviour: { payin?: SandboxBehaviour; payout?: SandboxBehaviour } = {},
  ): Promise<string> {
    const name = `${prefix}-${randomBytes(4).toString("hex")}`;
    const credentials = randomBytes(24).toString("base64url");
    const res = await send("PUT", `${this.#stack.urls.sandbox}/control/providers/${name}`, {
      json: { credentials, ...behaviour },
    });
    if (res.status !== 200) throw new Error(`sandbox PUT provider answered ${res.status}: ${res.text}`);
    await this.#must("PUT", `/providers/${name}`, {
      kind: "sandbox",
      base_url: this.#stack.urls.sandbox,
      credentials,
      methods: ["WT_RUB_C2C", "WT_RUB_PHONE"],
    });
    this.providerNames.push(name);
    return name;
  }

  /**
   * A new merchant with one shop, an API key, the demo pricing on every routed method,
   * a webhook receiver of its own (verifying with the shop's secret) and the routes given.
   */
  async newShop(options: {
    name: string;
    routes: Partial<Record<"WT_RUB_C2C" | "WT_RUB_PHONE", RouteSpec>>;
    hostedPage?: boolean;
    /** What the receiver answers; by default 204 for a verified webhook, 400 otherwise. */
    receiverStatus?: Parameters<typeof startWebhookReceiver>[0]["status"];
  }): Promise<TestShop> {
    const merchantId = (await this.#must("POST", "/merchants", { name: `${options.name} merchant` }))
      .merchant_id as string;
    const shopId = (
      await this.#must("POST", "/shops", { merchant_id: merchantId, name: `${options.name} shop` })
    ).shop_id as string;
    const apiKey = (await this.#must("POST", `/shops/${shopId}/api-keys`, {})).api_key as string;
    for (const [method, route] of Object.entries(options.routes)) {
      await this.#must("PUT", `/shops/${shopId}/routes/${method}`, route);
      await this.#must("PUT", `/shops/${shopId}/pricing/${method}`, {
        payin: [DEMO_PRICING.payin],
        payout: [DEMO_PRICING.payout],
      });
    }
    let secret: string | undefined;
    const receiver = await startWebhookReceiver({ secret: () => secret, status: options.receiverStatus });
    const settings = await this.#must("PUT", `/shops/${shopId}/settings`, {
      webhook_url: receiver.url,
      hosted_page_enabled: options.hostedPage ?? false,
    });
    secret = settings.webhook_secret as string;
    if (!secret) throw new Error(`no webhook secret in ${JSON.stringify(settings)}`);
    return {
      merchantId,
      shopId,
      apiKey,
      api: new MerchantApi(this.#stack.urls.edge, apiKey),
      webhookSecret: secret,
      receiver,
    };
  }

  /** Sets the FX rate `to = from × rate`. */
  async putFxRate(from: string, to: string, rate: string, source: string) {
    await this.#must("PUT", `/fx/rates/${from}/${to}`, { rate, source });
  }

  /** Posts a manual adjustment (positive credits the shop). */
  async adjust(shopId: string, currency: string, amount: string, reason = "e2e adjustment") {
    return this.#must("POST", `/shops/${shopId}/ledger/adjustments`, { currency, amount, reason });
  }

  /** The shop's webhook delivery log, newest first. */
  async deliveries(shopId: string): Promise<Delivery[]> {
    return (await this.#must("GET", `/shops/${shopId}/webhooks/deliveries?limit=200`)).deliveries;
  }

  /** Schedules one more delivery of an event. */
  redeliver(shopId: string, eventId: string): Promise<HttpAnswer> {
    return this.admin("POST", `/shops/${shopId}/webhooks/deliveries/${eventId}/redeliver`);
  }

  /** Settles an operation at the sandbox (the payer paid, or the provider rejected). */
  async settle(
    operationId: string,
    outcome: { legs: string[]; provider?: string } | { status: "rejected"; provider?: string },
  ) {
    const res = await send("POST", `${this.#stack.urls.sandbox}/control/operations/${operationId}/settle`, {
      json: outcome,
    });
    if (res.status !== 200) throw new Error(`sandbox settle answered ${res.status}: ${res.text}`);
    return res.json as { callback_id: string; delivery: { delivered: boolean; attempts: number } };
  }

  /** What each sandbox provider received under an operation id. */
  async sandboxOperation(operationId: string): Promise<SandboxView[]> {
    const res = await send("GET", `${this.#stack.urls.sandbox}/control/operations/${operationId}`);
    if (res.status !== 200) throw new Error(`sandbox GET operation answered ${res.status}: ${res.text}`);
    return (res.json as { received: SandboxView[] }).received;
  }
}

/** A row of the admin webhook delivery log. */
export interface Delivery {
  event_id: string;
  event_type: string;
  operation_id: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  next_attempt_at: string | null;
  delivered_at: string | null;
}

/** What one sandbox provider holds under a reference. */
export interface SandboxView {
  provider: string;
  decision: "accepted" | "declined" | "no_answer";
  requests: number;
  [key: string]: unknown;
}

/** A fresh merchant_operation_id. */
export const newMop = (prefix = "order") => `${prefix}-${randomBytes(8).toString("hex")}`;

/** A valid payment body of the card rail; `overrides` replace or add fields. */
export const paymentBody = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  merchant_operation_id: newMop(),
  client_id: "customer-1",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
  ...overrides,
});

/** The status, public code and field of an error answer, for one `toEqual`. */
export const errorOf = (res: HttpAnswer) => ({
  status: res.status,
  code: res.json?.error?.code as string | undefined,
  field: res.json?.error?.field as string | undefined,
});

/** The webhooks a receiver got for one operation (every attempt), optionally of one type. */
export const webhooksOf = (receiver: WebhookReceiver, operationId: string, type?: string) =>
  receiver.received.filter((h) => {
    const body = h.body as { type?: string; data?: { operation_id?: string } };
    return body.data?.operation_id === operationId && (type === undefined || body.type === type);
  });

/** One currency's row of a `GET /v1/balances` answer. */
export function balanceRow(res: HttpAnswer, currency: string) {
  const rows = (res.json?.balances ?? []) as {
    currency: string;
    balance: string;
    current_minus: string;
    reserved: string;
  }[];
  const row = rows.find((r) => r.currency === currency);
  if (!row) throw new Error(`no ${currency} row in ${res.status} ${res.text}`);
  return row;
}
