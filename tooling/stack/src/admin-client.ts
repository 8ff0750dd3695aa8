import { field, requestJson } from "./http-json.ts";

/** A pricing tier of the ledger: percent of the amount plus a fixed fee, in an amount range. */
export interface PricingTier {
  min_amount: string;
  max_amount: string;
  percent: string;
  fixed: string;
}

/**
 * The admin API of the edge (`/admin/v1`, bearer ADMIN_TOKEN), the calls the demo and
 * the end-to-end suites make. Amounts are decimal strings, as everywhere on the wire.
 */
export class AdminClient {
  readonly #base: string;
  readonly #headers: Record<string, string>;

  constructor(edgeUrl: string, adminToken: string) {
    this.#base = `${edgeUrl.replace(/\/+$/, "")}/admin/v1`;
    this.#headers = { authorization: `Bearer ${adminToken}` };
  }

  #call(method: string, path: string, body?: unknown) {
    return requestJson(method, `${this.#base}${path}`, { headers: this.#headers, body });
  }

  /** Creates a merchant; returns its id. */
  async createMerchant(name: string): Promise<string> {
    return field(await this.#call("POST", "/merchants", { name }), "merchant_id");
  }

  /** Creates a shop of the merchant; returns its id. */
  async createShop(merchantId: string, name: string): Promise<string> {
    return field(await this.#call("POST", "/shops", { merchant_id: merchantId, name }), "shop_id");
  }

  /** Issues an API key of the shop; returns the plaintext key, shown only this once. */
  async issueApiKey(shopId: string): Promise<string> {
    return field(await this.#call("POST", `/shops/${shopId}/api-keys`, {}), "api_key");
  }

  /** Registers (or replaces) a provider the operations service can route to. */
  async putProvider(
    name: string,
    provider: { kind: string; base_url: string; credentials: string; methods: string[] },
  ) {
    await this.#call("PUT", `/providers/${encodeURIComponent(name)}`, provider);
  }

  /** Sets which providers take the shop's payins and payouts of a method, in order. */
  async putRoute(
    shopId: string,
    method: string,
    route: { payin: string[]; payout: string[]; settlement_currency: string },
  ) {
    await this.#call("PUT", `/shops/${shopId}/routes/${method}`, route);
  }

  /** Sets the shop's commission tiers of a method. */
  async putPricing(shopId: string, method: string, pricing: { payin: PricingTier[]; payout: PricingTier[] }) {
    await this.#call("PUT", `/shops/${shopId}/pricing/${method}`, pricing);
  }

  /**
   * Changes the shop's settings (fields left out keep their value). A `webhook_url` is
   * handed to the webhooks service; the answer carries `webhook_secret`, the Standard
   * Webhooks signing secret, only when the shop had none before.
   */
  async putSettings(
    shopId: string,
    settings: { webhook_url?: string; hosted_page_enabled?: boolean; flexible_link_enabled?: boolean },
  ): Promise<{ webhook_secret?: string }> {
    return ((await this.#call("PUT", `/shops/${shopId}/settings`, settings)) ?? {}) as {
      webhook_secret?: string;
    };
  }

  /** Replaces the shop's webhook signing secret and returns the new one. */
  async rotateWebhookSecret(shopId: string): Promise<string> {
    return field(await this.#call("POST", `/shops/${shopId}/webhook-secret/rotate`, {}), "webhook_secret");
  }
}
