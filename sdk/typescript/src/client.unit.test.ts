import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GatewayClient } from "./client.ts";

const document = JSON.parse(readFileSync(new URL("./gen/openapi.json", import.meta.url), "utf8")) as {
  paths: Record<string, Record<string, unknown>>;
};

describe("GatewayClient", () => {
  it("has a method for every /v1 call of the gateway's OpenAPI document", async () => {
    const called = new Set<string>();
    const gateway = new GatewayClient({
      baseUrl: "https://gateway.example",
      apiKey: "gw_test_key",
      retry: { attempts: 1 },
      fetch: async (request) => {
        called.add(`${request.method} ${new URL(request.url).pathname}`);
        return Response.json({});
      },
    });
    const create = {
      merchant_operation_id: "order-1",
      client_id: "c",
      method: "WT_RUB_C2C",
      amount: "1.00",
      currency: "RUB",
    } as const;
    const ref = { operation_id: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e" };
    await gateway.createPayment(create);
    await gateway.createPayout(create);
    await gateway.createPaymentLink(create);
    await gateway.createFlexiblePaymentLink({
      merchant_operation_id: "order-2",
      client_id: "c",
      method: "WT_RUB_C2C",
      currency: "RUB",
      recommended_amount: "1.00",
    });
    await gateway.getOperationState(ref);
    await gateway.cancelOperation(ref);
    await gateway.getBalances();
    await gateway.getAvailability({
      method: "WT_RUB_C2C",
      currency: "RUB",
      min_amount: "1",
      max_amount: "2",
    });
    await gateway.getRecommendations({
      method: "WT_RUB_C2C",
      currency: "RUB",
      min_amount: "1.00",
      max_amount: "2.00",
      amount: "1.50",
    });
    await gateway.confirmPayment({ ...ref, receipt: new Uint8Array([1]) });

    const documented = Object.entries(document.paths)
      .filter(([path]) => path.startsWith("/v1/"))
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
    expect([...called].sort()).toEqual(documented.sort());
  });

  it("sends the API key and the query of a read", async () => {
    let seen: Request | undefined;
    const gateway = new GatewayClient({
      baseUrl: "https://gateway.example/",
      apiKey: "gw_test_key",
      fetch: async (request) => {
        seen = request;
        return Response.json({ available: [] });
      },
    });
    await gateway.getAvailability({
      method: "WT_RUB_C2C",
      currency: "RUB",
      min_amount: "500.00",
      max_amount: "5000.00",
    });
    expect(seen!.headers.get("x-api-key")).toBe("gw_test_key");
    expect(seen!.url).toBe(
      "https://gateway.example/v1/payment/availability?method=WT_RUB_C2C&currency=RUB&min_amount=500.00&max_amount=5000.00",
    );
  });
});
