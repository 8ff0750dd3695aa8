import { requestJson } from "./http-json.ts";

/**
 * The control API of the sandbox provider (`/control`): what a test or a person at the
 * demo does in place of a real provider's back office.
 */
export class SandboxClient {
  readonly #base: string;

  constructor(sandboxUrl: string) {
    this.#base = `${sandboxUrl.replace(/\/+$/, "")}/control`;
  }

  /**
   * Creates (or replaces) a simulated provider sharing `credentials` with the gateway.
   * It accepts every payin and payout unless told otherwise.
   */
  async putProvider(name: string, provider: { credentials: string }) {
    await requestJson("PUT", `${this.#base}/providers/${encodeURIComponent(name)}`, { body: provider });
  }

  /**
   * Settles an operation at the provider, which then calls the gateway back: completed
   * with the amounts of the physical transfers (`legs`), or rejected.
   */
  async settle(operationId: string, outcome: { legs: string[] } | { status: "rejected" }) {
    return (await requestJson("POST", `${this.#base}/operations/${operationId}/settle`, {
      body: outcome,
    })) as {
      callback_id: string;
      delivery: unknown;
    };
  }
}
