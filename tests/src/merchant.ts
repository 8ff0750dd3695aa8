import { requestJson } from "@gw/stack/http-json";

/** What a merchant's integration does: `/v1` calls with its API key. */
export class MerchantClient {
  readonly #base: string;
  readonly #headers: Record<string, string>;

  constructor(edgeUrl: string, apiKey: string) {
    this.#base = `${edgeUrl}/v1`;
    this.#headers = { "x-api-key": apiKey };
  }

  createPayment(body: Record<string, unknown>) {
    return requestJson("POST", `${this.#base}/payment`, { headers: this.#headers, body }) as Promise<
      Record<string, unknown>
    >;
  }

  operationState(ref: { operation_id: string } | { merchant_operation_id: string }) {
    return requestJson("POST", `${this.#base}/get_operation_state`, {
      headers: this.#headers,
      body: ref,
    }) as Promise<Record<string, unknown>>;
  }

  async balances() {
    return (await requestJson("GET", `${this.#base}/balances`, { headers: this.#headers })) as {
      balances: { currency: string; balance: string; current_minus: string; reserved: string }[];
    };
  }
}

/**
 * Polls `read` until `done` holds for its value, and returns that value. Throws after
 * `timeoutMs` with the last value seen, so a failure says where the flow stopped.
 */
export async function pollUntil<T>(
  what: string,
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  let lastError: unknown;
  for (;;) {
    try {
      last = await read();
      if (done(last)) return last;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const seen = last === undefined ? String(lastError) : JSON.stringify(last);
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last seen: ${seen}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
