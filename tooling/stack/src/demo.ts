// `pnpm demo` / `./gw demo`: sets up a ready-to-use shop on the running local stack and
// prints its API key and the curl commands of the walk-through.
import { LOCAL_WEBHOOK_URL, localAdminToken, WEBHOOK_SECRET_FILE, writeSecret } from "./local.ts";
import { DEMO_PRICING, provisionShop } from "./provision.ts";

const edgeUrl = process.env.EDGE_URL ?? "http://127.0.0.1:8080";
const sandboxUrl = process.env.SANDBOX_URL ?? "http://127.0.0.1:8082";
const webhookUrl = process.env.DEMO_WEBHOOK_URL ?? LOCAL_WEBHOOK_URL;

try {
  const shop = await provisionShop({
    edgeUrl,
    sandboxUrl,
    adminToken: localAdminToken(),
    webhookUrl,
    name: `demo-${Date.now().toString(36)}`,
  });
  // The runner's webhook receiver verifies signatures with this secret.
  writeSecret(WEBHOOK_SECRET_FILE, shop.webhookSecret);
  const moid = `order-${Date.now().toString(36)}`;
  process.stdout.write(`Demo shop ready.
  merchant   ${shop.merchantId}
  shop       ${shop.shopId}
  provider   ${shop.provider} (sandbox), routes WT_RUB_C2C and WT_RUB_PHONE, payins and payouts
  pricing    payin ${DEMO_PRICING.payin.percent}% + ${DEMO_PRICING.payin.fixed}, payout ${DEMO_PRICING.payout.percent}% + ${DEMO_PRICING.payout.fixed}
  webhooks   ${webhookUrl} (signing secret saved in ${WEBHOOK_SECRET_FILE})

The API key is shown once:

export API_KEY='${shop.apiKey}'

# 1. create a payment (answers pending, with the card number to pay to)
curl -s ${edgeUrl}/v1/payment -H "X-API-Key: $API_KEY" -H 'content-type: application/json' \\
  -d '{"merchant_operation_id":"${moid}","client_id":"customer-1","method":"WT_RUB_C2C","amount":"1000.00","currency":"RUB"}'
export OPERATION_ID=<operation_id from the answer>

# 2. the payer pays: settle it in the sandbox
curl -s -X POST ${sandboxUrl}/control/operations/$OPERATION_ID/settle -H 'content-type: application/json' -d '{"legs":["1000.00"]}'

# 3. read the state (completed, actual_amount 1000.00, commission 25.00)
curl -s ${edgeUrl}/v1/get_operation_state -H "X-API-Key: $API_KEY" -H 'content-type: application/json' \\
  -d "{\\"operation_id\\":\\"$OPERATION_ID\\"}"

# 4. the balance: 975.00 RUB credited
curl -s ${edgeUrl}/v1/balances -H "X-API-Key: $API_KEY"

# 5. the webhook the gateway delivered (signed, verified by the receiver)
curl -s ${webhookUrl}
`);
} catch (err) {
  console.error(`demo: ${err instanceof Error ? err.message : String(err)}`);
  console.error(`demo: is the stack up (./gw up) and ready at ${edgeUrl}?`);
  process.exit(1);
}
