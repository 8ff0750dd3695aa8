import { randomBytes } from "node:crypto";
import { AdminClient, type PricingTier } from "./admin-client.ts";
import { SandboxClient } from "./sandbox-client.ts";

/** The methods the demo shop is set up for, both RUB. */
export const DEMO_METHODS = ["WT_RUB_C2C", "WT_RUB_PHONE"] as const;

/** The demo's commission: payins 2.5% + 0, payouts 1% + 10, one tier over every amount. */
export const DEMO_PRICING: { payin: PricingTier; payout: PricingTier } = {
  payin: { min_amount: "0.01", max_amount: "10000000.00", percent: "2.5", fixed: "0" },
  payout: { min_amount: "0.01", max_amount: "10000000.00", percent: "1", fixed: "10" },
};

export interface ProvisionOptions {
  edgeUrl: string;
  sandboxUrl: string;
  adminToken: string;
  /** Where the shop's webhooks go. */
  webhookUrl: string;
  /** Names the merchant, shop and provider; defaults to "demo". */
  name?: string;
}

export interface ProvisionedShop {
  merchantId: string;
  shopId: string;
  apiKey: string;
  provider: string;
  /** The shop's Standard Webhooks signing secret. */
  webhookSecret: string;
}

/**
 * Sets up one ready-to-use shop through the admin API, the way an operator would: a
 * merchant, its shop and an API key; a sandbox provider registered both in the sandbox
 * and in the gateway with the same shared secret; routes of both methods (payins and
 * payouts) through it; pricing; and the webhook URL. The demo and the e2e suites share it.
 */
export async function provisionShop(options: ProvisionOptions): Promise<ProvisionedShop> {
  const name = options.name ?? "demo";
  const admin = new AdminClient(options.edgeUrl, options.adminToken);
  const sandbox = new SandboxClient(options.sandboxUrl);

  const merchantId = await admin.createMerchant(`${name} merchant`);
  const shopId = await admin.createShop(merchantId, `${name} shop`);
  const apiKey = await admin.issueApiKey(shopId);

  const provider = `sandbox-${name}`;
  const credentials = randomBytes(32).toString("base64url");
  const methods = [...DEMO_METHODS];
  await sandbox.putProvider(provider, { credentials });
  await admin.putProvider(provider, { kind: "sandbox", base_url: options.sandboxUrl, credentials, methods });

  for (const method of DEMO_METHODS) {
    await admin.putRoute(shopId, method, {
      payin: [provider],
      payout: [provider],
      settlement_currency: "RUB",
    });
    await admin.putPricing(shopId, method, { payin: [DEMO_PRICING.payin], payout: [DEMO_PRICING.payout] });
  }

  const { webhook_secret } = await admin.putSettings(shopId, { webhook_url: options.webhookUrl });
  // A new shop has no secret, so the answer carries it; rotating covers a shop that had one.
  const webhookSecret = webhook_secret ?? (await admin.rotateWebhookSecret(shopId));
  return { merchantId, shopId, apiKey, provider, webhookSecret };
}
