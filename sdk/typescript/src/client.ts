import createClient, { type Client } from "openapi-fetch";
import { gatewayErrorOf } from "./errors.ts";
import type { paths } from "./gen/schema.ts";
import { DEFAULT_RETRY, type RetryPolicy, retryingFetch } from "./retry.ts";
import type {
  Availability,
  AvailabilityQuery,
  Balances,
  CancelOperationRequest,
  CancelResult,
  ConfirmResult,
  CreateOperationRequest,
  FlexibleLinkRequest,
  FlexibleLinkResult,
  LinkOperation,
  Operation,
  OperationRef,
  OperationState,
  Recommendations,
  RecommendationsRequest,
} from "./types.ts";

/** How to reach the gateway. */
export interface GatewayClientOptions {
  /** The gateway's base URL, e.g. `https://gateway.example` (without `/v1`). */
  baseUrl: string;
  /** The shop's API key, sent as `X-API-Key`. */
  apiKey: string;
  /** Overrides of the retry policy; `{ attempts: 1 }` turns retries off. */
  retry?: Partial<RetryPolicy>;
  /** The `fetch` used underneath (the global one by default). */
  fetch?: (request: Request) => Promise<Response>;
  /** Waits between attempts; for tests. */
  sleep?: (ms: number) => Promise<void>;
}

/** A receipt upload: the operation and the PDF. */
export interface ConfirmPaymentRequest {
  operation_id: string;
  /** The PDF receipt's bytes. */
  receipt: Blob | Uint8Array;
  /** The file name the gateway records; `receipt.pdf` when not given. */
  filename?: string;
}

type Answer<T> = { data?: T; error?: unknown; response: Response };

/**
 * The merchant API (`/v1`), typed from the gateway's OpenAPI document. Every method
 * returns the answer's body or throws `GatewayError` (an error answer, with its code) or
 * `GatewayUnreachableError` (no answer: the outcome is unknown). Retries are safe by
 * construction: see `RetryPolicy` and `retryingFetch`.
 */
export class GatewayClient {
  /** The underlying openapi-fetch client, for anything the methods below do not cover. */
  readonly raw: Client<paths>;

  constructor(options: GatewayClientOptions) {
    const policy = { ...DEFAULT_RETRY, ...options.retry };
    const base = options.fetch ?? ((request: Request) => globalThis.fetch(request));
    this.raw = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
      headers: { "x-api-key": options.apiKey },
      fetch: retryingFetch({ policy, fetch: base, ...(options.sleep ? { sleep: options.sleep } : {}) }),
    });
  }

  /** `POST /v1/payment`: creates a payment (idempotent on `merchant_operation_id` and the body). */
  createPayment(body: CreateOperationRequest): Promise<Operation> {
    requireKey(body);
    return this.#result(this.raw.POST("/v1/payment", { body }));
  }

  /** `POST /v1/payout`: creates a payout (idempotent on `merchant_operation_id` and the body). */
  createPayout(body: CreateOperationRequest): Promise<Operation> {
    requireKey(body);
    return this.#result(this.raw.POST("/v1/payout", { body }));
  }

  /** `POST /v1/payment/link`: creates a payment with a hosted page (`payment_url`). */
  createPaymentLink(body: CreateOperationRequest): Promise<LinkOperation> {
    requireKey(body);
    return this.#result(this.raw.POST("/v1/payment/link", { body }));
  }

  /** `POST /v1/payment/link/flexible`: a link for a recommended amount from the self-matching pool. */
  createFlexiblePaymentLink(body: FlexibleLinkRequest): Promise<FlexibleLinkResult> {
    requireKey(body);
    return this.#result(this.raw.POST("/v1/payment/link/flexible", { body }));
  }

  /** `POST /v1/get_operation_state`: an operation of this shop, with its receipts. */
  getOperationState(ref: OperationRef): Promise<OperationState> {
    return this.#result(this.raw.POST("/v1/get_operation_state", { body: ref }));
  }

  /** `POST /v1/cancel_operation`: cancels a payment; `already_terminal` when it had ended. */
  cancelOperation(body: CancelOperationRequest): Promise<CancelResult> {
    return this.#result(this.raw.POST("/v1/cancel_operation", { body }));
  }

  /** `GET /v1/balances`: this shop's balances. */
  getBalances(): Promise<Balances> {
    return this.#result(this.raw.GET("/v1/balances"));
  }

  /** `GET /v1/payment/availability`: which amounts the self-matching pool can take now. */
  getAvailability(query: AvailabilityQuery): Promise<Availability> {
    return this.#result(this.raw.GET("/v1/payment/availability", { params: { query } }));
  }

  /** `POST /v1/payment/recommendations`: amounts the pool recommends. */
  getRecommendations(body: RecommendationsRequest): Promise<Recommendations> {
    return this.#result(this.raw.POST("/v1/payment/recommendations", { body }));
  }

  /**
   * `POST /v1/confirm_payment`: uploads the payer's PDF receipt. Repeated only when the
   * gateway answers that it decided nothing; after no answer, read the state instead.
   */
  confirmPayment(request: ConfirmPaymentRequest): Promise<ConfirmResult> {
    const form = new FormData();
    form.set("operation_id", request.operation_id);
    form.set("confirmation_type", "receipt");
    const receipt =
      request.receipt instanceof Blob
        ? request.receipt
        : new Blob([new Uint8Array(request.receipt)], { type: "application/pdf" });
    form.set("receipt", receipt, request.filename ?? "receipt.pdf");
    return this.#result(
      this.raw.POST("/v1/confirm_payment", {
        // The generated type describes the form's fields; the form itself is what is sent.
        body: form as unknown as never,
        bodySerializer: (b: unknown) => b as FormData,
      }),
    );
  }

  async #result<T>(call: Promise<Answer<T>>): Promise<T> {
    const { data, error, response } = await call;
    if (response.ok && data !== undefined) return data;
    throw gatewayErrorOf(response.status, response.headers, error);
  }
}

/** A create without its idempotency key could not be repeated safely, so it is never sent. */
function requireKey(body: { merchant_operation_id?: unknown }): void {
  if (typeof body.merchant_operation_id !== "string" || body.merchant_operation_id.trim() === "") {
    throw new TypeError("merchant_operation_id is required: it is what makes a repeated create safe");
  }
}
