import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createTestDatabase, type TestDatabase } from "@gw/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningSandbox, startSandbox } from "./app.ts";
import { configSchema } from "./config.ts";
import { signatureOf } from "./signature.ts";

interface Received {
  body: string;
  headers: IncomingHttpHeaders;
}

/** A stand-in for the gateway's callback endpoint: records every POST and answers `status`. */
class Receiver {
  readonly received: Received[] = [];
  status = 200;
  #server: Server | undefined;
  url = "";

  async start() {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.received.push({ body: Buffer.concat(chunks).toString("utf8"), headers: req.headers });
        res.writeHead(this.status).end();
      });
    });
    await new Promise<void>((r) => this.#server!.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/callbacks/sandbox`;
  }

  stop() {
    return new Promise((r) => this.#server?.close(r));
  }
}

/** Polls `check` until it returns a value, failing after a bounded deadline. */
async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 25));
  }
}

const CREDENTIALS = "sandbox-secret-credentials-0001";
let database: TestDatabase;
let sandbox: RunningSandbox;
let receiver: Receiver;
let base = "";

const config = () =>
  configSchema.parse({
    DATABASE_URL: database.url,
    HTTP_PORT: "0",
    METRICS_PORT: "0",
    LOG_LEVEL: "silent",
    CALLBACK_RETRY_BASE_MS: "50",
    CALLBACK_RETRY_MAX_MS: "200",
    CALLBACK_POLL_MS: "25",
  });

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const auth = { authorization: `Bearer ${CREDENTIALS}` };
const putProvider = (name: string, settings: Record<string, unknown> = {}) =>
  call("PUT", `/control/providers/${name}`, { credentials: CREDENTIALS, ...settings });
const payin = (provider: string, reference: string, extra: Record<string, unknown> = {}) =>
  call(
    "POST",
    `/providers/${provider}/v1/payins`,
    {
      reference,
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
      callback_url: receiver.url,
      ...extra,
    },
    auth,
  );

function luhnValid(number: string): boolean {
  let sum = 0;
  for (let i = 0; i < number.length; i++) {
    let d = Number(number[number.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

beforeAll(async () => {
  database = await createTestDatabase();
  sandbox = await startSandbox(config());
  base = `http://127.0.0.1:${sandbox.port}`;
  receiver = new Receiver();
  await receiver.start();
});

afterAll(async () => {
  await sandbox?.stop();
  await receiver?.stop();
  await database?.drop();
});

describe("sandbox provider", () => {
  it("answers its probes with 204", async () => {
    expect((await call("GET", "/livez")).status).toBe(204);
    expect((await call("GET", "/readyz")).status).toBe(204);
  });

  it("rejects calls without the provider's credentials", async () => {
    await putProvider("auth");
    const wrong = await call(
      "POST",
      "/providers/auth/v1/payins",
      { reference: "r", method: "WT_RUB_C2C", amount: "1.00", currency: "RUB", callback_url: receiver.url },
      { authorization: "Bearer not-the-credentials" },
    );
    expect(wrong.status).toBe(401);
    expect(wrong.json.error.code).toBe("unauthorized");
    const unknown = await call("GET", "/providers/nobody/v1/operations/r", undefined, auth);
    expect(unknown.status).toBe(401);
  });

  it("accepts a card payin with a Luhn-valid card number and no expiry unless configured", async () => {
    const put = await putProvider("cards", { payin: { mode: "accept", receipt_required: true } });
    expect(put.json).toMatchObject({ base_url: base, provider_url: `${base}/providers/cards` });
    const res = await payin("cards", "op-card-1");
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      reference: "op-card-1",
      decision: "accepted",
      status: "pending",
      receipt_required: true,
    });
    expect(res.json.requisites.number).toMatch(/^2200\d{12}$/);
    expect(luhnValid(res.json.requisites.number)).toBe(true);
    expect(res.json.expires_at).toBeUndefined();
  });

  it("gives a phone and a bank code for phone payins, and an expiry when configured", async () => {
    await putProvider("phones", {
      payin: {
        mode: "accept",
        receipt_required: false,
        expires_in_seconds: 900,
        requisites: { bank_code: "tbank" },
      },
    });
    const res = await payin("phones", "op-phone-1", { method: "WT_RUB_PHONE" });
    expect(res.status).toBe(200);
    expect(res.json.requisites).toEqual({ number: expect.stringMatching(/^\+79\d{9}$/), bankname: "tbank" });
    expect(res.json.receipt_required).toBe(false);
    const seen = await call("GET", "/control/operations/op-phone-1");
    const { created_at: createdAt } = seen.json.received[0];
    expect(Math.round((Date.parse(res.json.expires_at) - Date.parse(createdAt)) / 1000)).toBe(900);
  });

  it("answers a repeated reference with the first answer and refuses a different operation under it", async () => {
    await putProvider("repeat");
    const first = await payin("repeat", "op-repeat-1");
    const again = await payin("repeat", "op-repeat-1");
    expect(again.json).toEqual(first.json);
    const other = await payin("repeat", "op-repeat-1", { amount: "999.00" });
    expect(other.status).toBe(409);
    expect(other.json.error.code).toBe("reference_conflict");
    const seen = await call("GET", "/control/operations/op-repeat-1");
    expect(seen.json.received).toHaveLength(1);
    expect(seen.json.received[0].requests).toBe(3);
  });

  it("declines when told to, with the configured reason", async () => {
    await putProvider("declines", { payin: { mode: "decline", decline_reason: "limits_exceeded" } });
    const res = await payin("declines", "op-decline-1");
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ decision: "declined", reason: "limits_exceeded" });
  });

  it("validates payouts: phone payouts need a bank code, and the currency must match the method", async () => {
    await putProvider("payouts");
    const payout = (extra: Record<string, unknown>) =>
      call(
        "POST",
        "/providers/payouts/v1/payouts",
        {
          reference: "po-1",
          method: "WT_RUB_PHONE",
          amount: "10.00",
          currency: "RUB",
          callback_url: receiver.url,
          ...extra,
        },
        auth,
      );
    const noBank = await payout({ destination: { number: "+79001234567" } });
    expect(noBank.status).toBe(400);
    expect(noBank.json.error.field).toBe("destination.bankname");
    const wrongCurrency = await payout({
      currency: "USDT",
      destination: { number: "+79001234567", bankname: "sber" },
    });
    expect(wrongCurrency.status).toBe(422);
    const ok = await payout({ destination: { number: "+79001234567", bankname: "sber" } });
    expect(ok.json).toMatchObject({ decision: "accepted", direction: "payout" });
    expect(ok.json.requisites).toBeUndefined();
  });

  it("holds a no_answer request open until the client gives up, and records it", async () => {
    await putProvider("silent", { payin: { mode: "no_answer" } });
    const controller = new AbortController();
    const pending = fetch(`${base}/providers/silent/v1/payins`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth },
      body: JSON.stringify({
        reference: "op-silent-1",
        method: "WT_RUB_C2C",
        amount: "5.00",
        currency: "RUB",
        callback_url: receiver.url,
      }),
      signal: controller.signal,
    });
    const seen = await eventually(async () => {
      const res = await call("GET", "/control/operations/op-silent-1");
      return res.status === 200 ? res.json : undefined;
    });
    expect(seen.received[0]).toMatchObject({ provider: "silent", decision: "no_answer", status: "pending" });
    controller.abort();
    await expect(pending).rejects.toThrow();
  });

  it("keeps an operation it took while a slow answer was abandoned by the client", async () => {
    await putProvider("slow", { payin: { mode: "accept", delay_ms: 60_000 } });
    const controller = new AbortController();
    const pending = fetch(`${base}/providers/slow/v1/payins`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth },
      body: JSON.stringify({
        reference: "op-slow-1",
        method: "WT_RUB_C2C",
        amount: "5.00",
        currency: "RUB",
        callback_url: receiver.url,
      }),
      signal: controller.signal,
    });
    await eventually(async () =>
      (await call("GET", "/control/operations/op-slow-1")).status === 200 ? true : undefined,
    );
    controller.abort();
    await expect(pending).rejects.toThrow();
    const status = await call("GET", "/providers/slow/v1/operations/op-slow-1", undefined, auth);
    expect(status.json).toMatchObject({ decision: "accepted", status: "pending" });
  });

  it("counts what it received in its metrics", async () => {
    const res = await fetch(`http://127.0.0.1:${sandbox.metricsPort}/metrics`);
    const text = await res.text();
    expect(text).toMatch(
      /sandbox_create_requests_total\{provider="declines",direction="payin",decision="declined"\} 1/,
    );
  });

  it("settles in two legs and posts one signed callback that the receiver accepts", async () => {
    await putProvider("settle");
    await payin("settle", "op-settle-1");
    const before = receiver.received.length;
    const settled = await call("POST", "/control/operations/op-settle-1/settle", {
      legs: ["600.00", "400.00"],
    });
    expect(settled.status).toBe(200);
    expect(settled.json.delivery).toMatchObject({ delivered: true, attempts: 1, status_code: 200 });
    const got = receiver.received[before]!;
    const body = JSON.parse(got.body);
    expect(body).toMatchObject({
      callback_id: settled.json.callback_id,
      reference: "op-settle-1",
      status: "completed",
    });
    expect(body.legs.map((l: { amount: string }) => l.amount)).toEqual(["600.00", "400.00"]);
    const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(got.headers["x-sandbox-signature"]));
    expect(match).not.toBeNull();
    expect(match![2]).toBe(signatureOf(CREDENTIALS, Number(match![1]), got.body));

    const status = await call("GET", "/providers/settle/v1/operations/op-settle-1", undefined, auth);
    expect(status.json).toMatchObject({ status: "completed", legs: body.legs });
    const again = await call("POST", "/control/operations/op-settle-1/settle", { status: "rejected" });
    expect(again.status).toBe(409);
  });

  it("does not settle an operation that every provider declined", async () => {
    const res = await call("POST", "/control/operations/op-decline-1/settle", { status: "rejected" });
    expect(res.status).toBe(404);
  });

  it("retries a refused callback in the background until it is delivered, across a restart", async () => {
    await putProvider("retry", { payout: { mode: "accept", receipt_required: false } });
    await call(
      "POST",
      "/providers/retry/v1/payouts",
      {
        reference: "op-retry-1",
        method: "WT_RUB_C2C",
        amount: "70.00",
        currency: "RUB",
        callback_url: receiver.url,
        destination: { number: "2200000000000004" },
      },
      auth,
    );
    receiver.status = 503;
    const settled = await call("POST", "/control/operations/op-retry-1/settle", { status: "rejected" });
    expect(settled.json.delivery).toMatchObject({ delivered: false, status_code: 503 });

    // A request held open by a silent provider is answered when the sandbox stops.
    await putProvider("silent-at-stop", { payin: { mode: "no_answer" } });
    const held = payin("silent-at-stop", "op-held-1");
    await eventually(async () =>
      (await call("GET", "/control/operations/op-held-1")).status === 200 ? true : undefined,
    );

    // The sandbox goes away with the callback undelivered; a new process on the same
    // database picks it up once the receiver is back.
    await sandbox.stop();
    expect(await held).toMatchObject({ status: 503, json: { error: { code: "no_answer" } } });
    receiver.status = 200;
    sandbox = await startSandbox(config());
    base = `http://127.0.0.1:${sandbox.port}`;
    const callback = await eventually(async () => {
      const res = await call("GET", "/control/operations/op-retry-1");
      const cb = res.json.received[0].callbacks[0];
      return cb.delivered_at ? cb : undefined;
    });
    expect(callback.callback_id).toBe(settled.json.callback_id);
    expect(callback.attempts).toBeGreaterThanOrEqual(2);
    const delivered = receiver.received.filter(
      (r) => JSON.parse(r.body).callback_id === settled.json.callback_id,
    );
    expect(new Set(delivered.map((r) => r.body)).size).toBe(1);
    expect(JSON.parse(delivered[0]!.body)).toMatchObject({ status: "rejected", legs: [] });
  });
});
