import { describe, expect, it } from "vitest";
import { GatewayClient } from "./client.ts";
import { GatewayError, GatewayUnreachableError, isGatewayError } from "./errors.ts";

// These tests drive the client's own retry logic through the `fetch` it is given; the
// real gateway meets the SDK in tests/e2e/sdk.test.ts.

interface Sent {
  method: string;
  path: string;
  body: string;
  headers: Record<string, string>;
}

/** A scripted transport: answers in order, records what was sent and what was waited. */
function scripted(...answers: Array<Response | Error>) {
  const sent: Sent[] = [];
  const waited: number[] = [];
  const client = new GatewayClient({
    baseUrl: "https://gateway.example/",
    apiKey: "gw_test_key",
    fetch: async (request) => {
      sent.push({
        method: request.method,
        path: new URL(request.url).pathname,
        body: await request.text(),
        headers: Object.fromEntries(request.headers.entries()),
      });
      const next = answers.shift();
      if (!next) throw new Error("no more scripted answers");
      if (next instanceof Error) throw next;
      return next;
    },
    sleep: async (ms) => {
      waited.push(ms);
    },
  });
  return { client, sent, waited };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
const errorBody = (code: string, message = code) => ({ error: { code, message }, request_id: "req-1" });
const payment = {
  merchant_operation_id: "order-1",
  client_id: "customer-1",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
} as const;
const created = { operation_id: "0191a5e4-7c1b-7b8e-9d4e-3f2a1b0c9d8e", status: "pending" };

describe("GatewayClient retries", () => {
  it("repeats a create after a 503 with the very same key, body and API key, waiting the Retry-After given", async () => {
    const { client, sent, waited } = scripted(
      json(503, errorBody("no_provider_accepted"), { "retry-after": "2" }),
      json(200, created),
    );
    const op = await client.createPayment({ ...payment });
    expect(op.operation_id).toBe(created.operation_id);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toEqual(sent[0]);
    expect(JSON.parse(sent[0]!.body)).toEqual(payment);
    expect(sent[0]!.headers["x-api-key"]).toBe("gw_test_key");
    expect(waited).toEqual([2000]);
  });

  it("repeats a create that got no answer, since the same key returns the original operation", async () => {
    const { client, sent } = scripted(new TypeError("fetch failed"), json(200, created));
    await client.createPayout({ ...payment, number: "4111111111111111" });
    expect(sent.map((s) => s.path)).toEqual(["/v1/payout", "/v1/payout"]);
    expect(sent[1]!.body).toBe(sent[0]!.body);
  });

  it("throws the last 503 as a GatewayError that reads as no decision once the attempts are spent", async () => {
    const { client, sent } = scripted(
      ...Array.from({ length: 4 }, () => json(503, errorBody("overloaded"), { "retry-after": "1" })),
    );
    const err = await client.getBalances().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ status: 503, code: "overloaded", noDecision: true, retryAfterMs: 1000 });
    expect(sent).toHaveLength(4);
  });

  it("gives up at once when Retry-After asks for longer than the policy waits", async () => {
    const { client, sent, waited } = scripted(json(503, errorBody("overloaded"), { "retry-after": "120" }));
    const err = await client.getBalances().catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 503, retryAfterMs: 120_000 });
    expect(sent).toHaveLength(1);
    expect(waited).toEqual([]);
  });

  it("never repeats a decided error, and gives its code, field and request id", async () => {
    const { client, sent } = scripted(
      json(412, {
        error: { code: "idempotency_conflict", message: "differs", field: "amount" },
        request_id: "r-9",
      }),
    );
    const err = await client.createPayment({ ...payment }).catch((e: unknown) => e);
    expect(err).toMatchObject({
      name: "GatewayError",
      status: 412,
      code: "idempotency_conflict",
      field: "amount",
      requestId: "r-9",
      noDecision: false,
    });
    expect(isGatewayError(err, "idempotency_conflict")).toBe(true);
    expect(isGatewayError(err, "no_provider_accepted")).toBe(false);
    expect(sent).toHaveLength(1);
  });

  it("never repeats a create refused by the shop's pricing, and reads it as a refusal, not as no decision", async () => {
    for (const [code, field] of [
      ["pricing_not_configured", "amount"],
      ["fx_rate_missing", "settlement_currency"],
    ] as const) {
      const { client, sent } = scripted(
        json(412, { error: { code, message: code, field }, request_id: "r" }),
      );
      const err = await client
        .createPayout({ ...payment, number: "2200123456789010" })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 412, code, field, refusal: true, noDecision: false });
      expect(sent).toHaveLength(1);
    }
    const conflict = new GatewayError(412, {
      error: { code: "idempotency_conflict", message: "x" },
      request_id: "r",
    });
    expect(conflict.refusal).toBe(false);
  });

  it("does not repeat a receipt upload that got no answer, and says the outcome is unknown", async () => {
    const { client, sent } = scripted(new TypeError("socket hang up"));
    const err = await client
      .confirmPayment({ operation_id: created.operation_id, receipt: new Uint8Array([37, 80, 68, 70]) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayUnreachableError);
    expect((err as Error).message).toContain("unknown");
    expect(sent).toHaveLength(1);
  });

  it("repeats a receipt upload the gateway answered 503, with the same multipart bytes", async () => {
    const { client, sent } = scripted(
      json(503, errorBody("receipt_evidence_unavailable")),
      json(200, { ...created, status: "awaiting_confirmation" }),
    );
    await client.confirmPayment({
      operation_id: created.operation_id,
      receipt: new Uint8Array([37, 80, 68, 70]),
    });
    expect(sent).toHaveLength(2);
    expect(sent[0]!.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    expect(sent[1]).toEqual(sent[0]);
    expect(sent[0]!.body).toContain('name="operation_id"');
  });

  it("refuses to send a create without a merchant_operation_id, which is what makes repeating it safe", async () => {
    const { client, sent } = scripted();
    expect(() => client.createPayment({ ...payment, merchant_operation_id: " " })).toThrow(TypeError);
    expect(sent).toHaveLength(0);
  });

  it("reads an error answer that is not the gateway's error body by its status alone", async () => {
    const { client } = scripted(new Response("<html>bad gateway</html>", { status: 502 }));
    const err = await client
      .getOperationState({ operation_id: created.operation_id })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 502, code: "http_502", noDecision: false });
  });
});
