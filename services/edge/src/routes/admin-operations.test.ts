import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, anOperation, type EdgeTestDatabase, edgeTestDatabase, testApp } from "../testing.ts";

// GET /admin/v1/operations/search over stand-ins for operations, webhooks and provider
// facts: one id or the other, and each found operation joined with what the other
// services hold about it.

let database: EdgeTestDatabase;
beforeAll(async () => {
  database = await edgeTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const OP = "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e";
const SHOP = "0191a5e4-7c1b-7b8e-9d4e-cccccccccccc";

describe("GET /admin/v1/operations/search", () => {
  const asked: unknown[] = [];
  const app = () =>
    testApp(database, {
      fakes: {
        operations: {
          findOperations: async (req) => {
            asked.push(req.id);
            return {
              operations: [
                {
                  shopId: SHOP,
                  merchantId: SHOP,
                  provider: "acme",
                  operation: anOperation({ operationId: OP, merchantOperationId: "order-1" }),
                  legs: [
                    { id: "l1", provider: "acme", providerLegId: "p1", amount: "10.00", completedAt: "t" },
                  ],
                  receipts: [],
                },
              ],
            };
          },
        },
        webhooks: {
          listDeliveries: async (req) => {
            asked.push({ deliveriesOf: req.operationId, shop: req.shopId });
            return { deliveries: [] };
          },
        },
        providerFacts: {
          listProviderFacts: async (req) => {
            asked.push({ factsOf: req.operationId });
            return { providerFacts: [] };
          },
        },
      },
    });

  it("wants exactly one of the two ids", async () => {
    const a = app();
    expect((await admin(a, "GET", "/admin/v1/operations/search")).status).toBe(400);
    const both = await admin(
      a,
      "GET",
      `/admin/v1/operations/search?operation_id=${OP}&merchant_operation_id=x`,
    );
    expect(both.status).toBe(400);
    expect((await admin(a, "GET", "/admin/v1/operations/search?operation_id=nope")).status).toBe(400);
    expect(asked).toEqual([]);
  });

  it("answers each operation with its legs, and asks webhooks and provider facts about it", async () => {
    const res = await admin(app(), "GET", "/admin/v1/operations/search?merchant_operation_id=order-1");
    expect(res.status).toBe(200);
    expect(res.body.operations).toMatchObject([
      {
        shop_id: SHOP,
        provider: "acme",
        operation: { operation_id: OP, merchant_operation_id: "order-1" },
        legs: [{ provider: "acme", provider_leg_id: "p1", amount: "10.00", receipt_id: null }],
        webhook_deliveries: [],
        provider_facts: [],
      },
    ]);
    expect(asked).toEqual([
      { case: "merchantOperationId", value: "order-1" },
      { deliveriesOf: OP, shop: SHOP },
      { factsOf: OP },
    ]);
  });
});
