import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  CallbackRejectedError,
  type Connector,
  type ProviderConfig,
  type ProviderCreateRequest,
} from "../../src/connectors/connector.ts";
import type { MemoryBehaviour as ProviderBehaviour } from "../../src/connectors/memory.ts";

/** A result callback as the provider sent it. */
export interface SentCallback {
  body: Uint8Array;
  headers: Record<string, string>;
  signedAt: Date;
  callbackId: string;
}

/** A connector to check, with the provider behind it and the controls the contract needs. */
export interface ConnectorUnderTest {
  connector: Connector;
  /** Configures a provider and returns it as the gateway would have it registered. */
  provider(
    name: string,
    settings?: { payin?: ProviderBehaviour; payout?: ProviderBehaviour },
  ): Promise<ProviderConfig>;
  /** A provider that cannot be reached at all. */
  unreachable(): ProviderConfig;
  /** Where creates tell the provider to post results. */
  callbackUrl: string;
  /**
   * Settles an operation at the provider (its legs, or rejected): the callback it sent, or
   * the provider's refusal (`refused`: its error code).
   */
  settle(
    operationId: string,
    result: { legs: string[] } | { status: "rejected" },
  ): Promise<{ callback: SentCallback } | { refused: string }>;
  /** What the provider received for an operation: each create's decision, repeats and destination. */
  received(
    operationId: string,
  ): Promise<{ decision: string; requests: number; destination?: Record<string, string> | null }[]>;
}

const timeout = () => AbortSignal.timeout(5_000);

/**
 * The contract every connector keeps (the sandbox's in sandbox.test.ts, the memory one in
 * memory.test.ts): creates answer accepted, declined or unknown (never a decline for a
 * silence), idempotently; callbacks are checked; status and withdrawal tell their cases
 * apart. `make` is called once per test.
 */
export function describeConnector(name: string, make: () => Promise<ConnectorUnderTest>): void {
  const createRequest = (
    h: ConnectorUnderTest,
    over: Partial<ProviderCreateRequest> = {},
  ): ProviderCreateRequest => ({
    operationId: randomUUID(),
    shopId: randomUUID(),
    direction: "payin",
    method: "WT_RUB_C2C",
    amount: "1000.00",
    currency: "RUB",
    callbackUrl: h.callbackUrl,
    ...over,
  });
  const payout = (h: ConnectorUnderTest) =>
    createRequest(h, { direction: "payout", number: "2200000000000004" });

  /** A signed two-leg settlement callback, for the signature tests to alter. */
  async function settledCallback(h: ConnectorUnderTest) {
    const p = await h.provider("callbacks");
    const req = createRequest(h);
    await h.connector.create(p, req, timeout());
    const settled = await h.settle(req.operationId, { legs: ["600.00", "400.00"] });
    if (!("callback" in settled)) throw new Error(`settle refused: ${settled.refused}`);
    return { p, req, callback: settled.callback };
  }

  describe(`${name}: create`, () => {
    it("maps an accepted card payin to its card number and receipt requirement, without an expiry", async () => {
      const h = await make();
      const p = await h.provider("accepting", { payin: { mode: "accept", receipt_required: true } });
      expect(await h.connector.create(p, createRequest(h), timeout())).toEqual({
        outcome: "accepted",
        requisites: { number: expect.stringMatching(/^\d{16}$/) },
        receiptRequired: true,
      });
    });

    it("maps a phone payin to a phone, a bank code and the provider's expiry", async () => {
      const h = await make();
      const p = await h.provider("phones", { payin: { mode: "accept", expires_in_seconds: 600 } });
      const answer = await h.connector.create(p, createRequest(h, { method: "WT_RUB_PHONE" }), timeout());
      expect(answer.outcome).toBe("accepted");
      if (answer.outcome !== "accepted") return;
      expect(answer.requisites).toEqual({
        number: expect.stringMatching(/^\+7\d{10}$/),
        bankname: "sberbank",
      });
      expect(answer.receiptRequired).toBe(false);
      expect(answer.expiresAt).toBeInstanceOf(Date);
    });

    it("sends a payout's destination and gets no requisites back", async () => {
      const h = await make();
      const p = await h.provider("payouts");
      const req = createRequest(h, {
        direction: "payout",
        method: "WT_RUB_PHONE",
        number: "+79001112233",
        bankname: "tbank",
      });
      expect(await h.connector.create(p, req, timeout())).toEqual({
        outcome: "accepted",
        receiptRequired: false,
      });
      expect((await h.received(req.operationId))[0]?.destination).toEqual({
        number: "+79001112233",
        bankname: "tbank",
      });
    });

    it("maps a decline to a declined answer with the provider's reason", async () => {
      const h = await make();
      const p = await h.provider("declining", { payin: { mode: "decline", decline_reason: "no_liquidity" } });
      expect(await h.connector.create(p, createRequest(h), timeout())).toEqual({
        outcome: "declined",
        reason: "no_liquidity",
      });
    });

    it("answers unknown, not declined, for a provider that never answers before the signal aborts", async () => {
      const h = await make();
      const p = await h.provider("silent", { payin: { mode: "no_answer" } });
      const req = createRequest(h);
      expect(await h.connector.create(p, req, AbortSignal.timeout(300))).toMatchObject({
        outcome: "unknown",
      });
      expect((await h.received(req.operationId))[0]?.decision).toBe("no_answer");
    });

    it("answers unknown for a provider that accepts after the caller gave up, which the status read then shows", async () => {
      const h = await make();
      const p = await h.provider("late", { payout: { mode: "accept", delay_ms: 1_500 } });
      const req = payout(h);
      expect(await h.connector.create(p, req, AbortSignal.timeout(200))).toMatchObject({
        outcome: "unknown",
      });
      expect(await h.connector.status(p, req.operationId, timeout())).toEqual({ status: "pending" });
    });

    it("answers unknown when the provider cannot be reached at all", async () => {
      const h = await make();
      const closed = h.unreachable();
      expect(await h.connector.create(closed, createRequest(h), timeout())).toMatchObject({
        outcome: "unknown",
      });
      expect(await h.connector.status(closed, randomUUID(), timeout())).toMatchObject({ status: "unknown" });
      expect(await h.connector.cancel(closed, randomUUID(), timeout())).toMatchObject({ outcome: "unknown" });
    });

    it("is idempotent on the operation id: a repeat gets the same requisites and creates nothing new", async () => {
      const h = await make();
      const p = await h.provider("repeats");
      const req = createRequest(h);
      const first = await h.connector.create(p, req, timeout());
      expect(await h.connector.create(p, req, timeout())).toEqual(first);
      const seen = await h.received(req.operationId);
      expect(seen).toHaveLength(1);
      expect(seen[0]?.requests).toBe(2);
    });

    it("reads a repeated create of an operation the provider has withdrawn as a decline, not an acceptance", async () => {
      const h = await make();
      const p = await h.provider("withdrawn-repeat");
      const req = createRequest(h);
      expect(await h.connector.create(p, req, timeout())).toMatchObject({ outcome: "accepted" });
      expect(await h.connector.cancel(p, req.operationId, timeout())).toEqual({ outcome: "withdrawn" });
      expect(await h.connector.create(p, req, timeout())).toEqual({
        outcome: "declined",
        reason: "withdrawn",
      });
    });

    it("reads a repeated create of an operation the provider has since rejected as a decline", async () => {
      const h = await make();
      const p = await h.provider("rejected-repeat");
      const req = payout(h);
      expect(await h.connector.create(p, req, timeout())).toMatchObject({ outcome: "accepted" });
      expect(await h.settle(req.operationId, { status: "rejected" })).toHaveProperty("callback");
      expect(await h.connector.create(p, req, timeout())).toEqual({
        outcome: "declined",
        reason: "rejected",
      });
    });

    it("reads a refusal of its credentials as a decline: the provider took nothing", async () => {
      const h = await make();
      const p = await h.provider("guarded");
      const wrong = { ...p, credentials: "someone-elses-credentials-000" };
      expect(await h.connector.create(wrong, createRequest(h), timeout())).toEqual({
        outcome: "declined",
        reason: "unauthorized",
      });
    });
  });

  describe(`${name}: parseCallback`, () => {
    it("accepts a two-leg settlement callback signed by the provider", async () => {
      const h = await make();
      const { p, req, callback } = await settledCallback(h);
      const result = h.connector.parseCallback(p, callback.body, callback.headers, callback.signedAt);
      expect(result).toMatchObject({
        callbackId: callback.callbackId,
        operationId: req.operationId,
        status: "completed",
      });
      expect(result.legs.map((l) => l.amount)).toEqual(["600.00", "400.00"]);
      expect(result.legs.every((l) => l.completedAt instanceof Date && l.id !== "")).toBe(true);
    });

    it("rejects a tampered body, another secret and a missing signature", async () => {
      const h = await make();
      const { p, callback } = await settledCallback(h);
      const tampered = new TextEncoder().encode(
        new TextDecoder().decode(callback.body).replace("600.00", "900.00"),
      );
      expect(() => h.connector.parseCallback(p, tampered, callback.headers, callback.signedAt)).toThrow(
        CallbackRejectedError,
      );
      const other = { ...p, credentials: "not-the-signing-credentials" };
      expect(() =>
        h.connector.parseCallback(other, callback.body, callback.headers, callback.signedAt),
      ).toThrow(CallbackRejectedError);
      expect(() => h.connector.parseCallback(p, callback.body, {}, callback.signedAt)).toThrow(
        CallbackRejectedError,
      );
    });

    it("rejects a timestamp older than five minutes or more than a minute ahead", async () => {
      const h = await make();
      const { p, callback } = await settledCallback(h);
      const at = (seconds: number) => new Date(callback.signedAt.getTime() + seconds * 1000);
      const parse = (now: Date) => () => h.connector.parseCallback(p, callback.body, callback.headers, now);
      expect(parse(at(301))).toThrow(CallbackRejectedError);
      expect(parse(at(-61))).toThrow(CallbackRejectedError);
      expect(parse(at(300))().status).toBe("completed");
      expect(parse(at(-60))().status).toBe("completed");
    });
  });

  describe(`${name}: status`, () => {
    it("reads pending before settlement and the legs after", async () => {
      const h = await make();
      const p = await h.provider("reads");
      const req = payout(h);
      await h.connector.create(p, req, timeout());
      expect(await h.connector.status(p, req.operationId, timeout())).toEqual({ status: "pending" });
      await h.settle(req.operationId, { legs: ["1000.00"] });
      expect(await h.connector.status(p, req.operationId, timeout())).toMatchObject({
        operationId: req.operationId,
        status: "completed",
        legs: [{ amount: "1000.00" }],
      });
    });

    it("reads a rejected settlement as rejected without legs", async () => {
      const h = await make();
      const p = await h.provider("rejects");
      const req = createRequest(h);
      await h.connector.create(p, req, timeout());
      await h.settle(req.operationId, { status: "rejected" });
      expect(await h.connector.status(p, req.operationId, timeout())).toEqual({
        operationId: req.operationId,
        status: "rejected",
        legs: [],
      });
    });

    it("answers not_found for a reference the provider never received", async () => {
      const h = await make();
      const p = await h.provider("unknown");
      expect(await h.connector.status(p, randomUUID(), timeout())).toEqual({ status: "not_found" });
    });
  });

  describe(`${name}: cancel`, () => {
    it("withdraws a pending payin: the status reads withdrawn and the provider refuses to settle it", async () => {
      const h = await make();
      const p = await h.provider("withdraws");
      const req = createRequest(h);
      await h.connector.create(p, req, timeout());
      expect(await h.connector.cancel(p, req.operationId, timeout())).toEqual({ outcome: "withdrawn" });
      expect(await h.connector.cancel(p, req.operationId, timeout())).toEqual({ outcome: "withdrawn" });
      expect(await h.connector.status(p, req.operationId, timeout())).toEqual({ status: "withdrawn" });
      expect(await h.settle(req.operationId, { legs: ["1000.00"] })).toEqual({ refused: "withdrawn" });
    });

    it("answers the final result of an operation the provider completed before the withdrawal", async () => {
      const h = await make();
      const p = await h.provider("too-late");
      const req = createRequest(h);
      await h.connector.create(p, req, timeout());
      await h.settle(req.operationId, { legs: ["700.00"] });
      expect(await h.connector.cancel(p, req.operationId, timeout())).toMatchObject({
        outcome: "final",
        result: { operationId: req.operationId, status: "completed", legs: [{ amount: "700.00" }] },
      });
    });

    it("tells not_found, not_supported and a failed withdrawal apart", async () => {
      const h = await make();
      const p = await h.provider("no-withdrawals", { payin: { mode: "accept", withdraw: "unsupported" } });
      const req = createRequest(h);
      await h.connector.create(p, req, timeout());
      expect(await h.connector.cancel(p, randomUUID(), timeout())).toEqual({ outcome: "not_found" });
      expect(await h.connector.cancel(p, req.operationId, timeout())).toEqual({ outcome: "not_supported" });
      const failing = await h.provider("failing-withdrawals", {
        payin: { mode: "accept", withdraw: "failing" },
      });
      const other = createRequest(h);
      await h.connector.create(failing, other, timeout());
      expect(await h.connector.cancel(failing, other.operationId, timeout())).toMatchObject({
        outcome: "unknown",
      });
      expect(await h.connector.status(failing, other.operationId, timeout())).toEqual({ status: "pending" });
    });
  });
}
