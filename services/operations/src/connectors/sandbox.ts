import { createHmac, timingSafeEqual } from "node:crypto";
import { metricsRegistry } from "@gw/rpc";
import { Histogram } from "prom-client";
import { request } from "undici";
import {
  CallbackRejectedError,
  type Connector,
  type ProviderAnswer,
  type ProviderConfig,
  type ProviderCreateRequest,
  type ProviderLeg,
  type ProviderResult,
  type ProviderStatus,
  type WithdrawAnswer,
} from "./connector.ts";

/** The header that carries a sandbox callback's signature: `t=<unix seconds>,v1=<hex>`. */
export const SIGNATURE_HEADER = "x-sandbox-signature";
/** A callback signed longer ago than this is refused, so a captured one cannot be replayed later. */
export const MAX_CALLBACK_AGE_SECONDS = 300;
/** A callback signed this far in the future is refused; beyond ordinary clock skew. */
export const MAX_CALLBACK_SKEW_SECONDS = 60;

const providerDuration = new Histogram({
  name: "provider_request_duration_seconds",
  help: "Duration of HTTP requests to providers, by provider, method and outcome (HTTP status or error).",
  labelNames: ["provider", "method", "outcome"],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
  registers: [metricsRegistry],
});

/** The provider answered, but not with something the connector can act on. */
export class ProviderRequestError extends Error {
  override readonly name = "ProviderRequestError";
  /** The provider's HTTP status, when it answered one. */
  readonly status: number | undefined;
  /** The provider's error code, when its body had one. */
  readonly code: string | undefined;

  constructor(message: string, status?: number, code?: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const AMOUNT = /^(0|[1-9]\d{0,15})\.\d{2}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEX_SHA256 = /^[0-9a-f]{64}$/;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const optionalString = (v: unknown): string | undefined =>
  typeof v === "string" && v !== "" ? v : undefined;

/** Where one hosted provider lives: the sandbox serves each under `/providers/{name}`. */
function providerUrl(provider: ProviderConfig, path: string): URL {
  const base = provider.baseUrl.endsWith("/") ? provider.baseUrl : `${provider.baseUrl}/`;
  return new URL(`providers/${encodeURIComponent(provider.name)}/v1/${path}`, base);
}

/** Parses provider legs; undefined when any leg is not a well-formed positive amount with a time. */
function parseLegs(value: unknown): ProviderLeg[] | undefined {
  if (!Array.isArray(value) || value.length > 1000) return undefined;
  const legs: ProviderLeg[] = [];
  for (const item of value) {
    if (!isObject(item)) return undefined;
    const { id, amount, completed_at: completedAt } = item;
    if (typeof id !== "string" || id === "" || id.length > 128) return undefined;
    if (typeof amount !== "string" || !AMOUNT.test(amount) || /^0\.00$/.test(amount)) return undefined;
    if (typeof completedAt !== "string") return undefined;
    const at = new Date(completedAt);
    if (Number.isNaN(at.getTime())) return undefined;
    legs.push({ id, amount, completedAt: at });
  }
  return legs;
}

/** Reads `t` and every `v1` of a `t=<unix>,v1=<hex>` header; undefined when it is malformed. */
function parseSignatureHeader(value: string): { timestamp: number; signatures: string[] } | undefined {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of value.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) return undefined;
    const key = part.slice(0, eq).trim();
    const val = part.slice(eq + 1).trim();
    if (key === "t") {
      if (!/^\d{1,12}$/.test(val)) return undefined;
      timestamp = Number(val);
    } else if (key === "v1") {
      if (!HEX_SHA256.test(val)) return undefined;
      signatures.push(val);
    }
  }
  return timestamp === undefined || signatures.length === 0 ? undefined : { timestamp, signatures };
}

function header(headers: Record<string, string>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

/** Why a request got no answer: the caller's deadline, or the transport. */
function transportReason(err: unknown, signal: AbortSignal): string {
  if (signal.aborted) return "no answer before the deadline";
  return `transport: ${err instanceof Error ? err.message : String(err)}`;
}

/** Reads the provider's JSON view of an operation (status read and withdraw answer). */
function readView(operationId: string, json: Json): ProviderStatus | undefined {
  if (json.status === "pending") return { status: "pending" };
  if (json.status === "withdrawn") return { status: "withdrawn" };
  if (json.status !== "completed" && json.status !== "rejected") return undefined;
  const legs = parseLegs(json.legs);
  if (!legs) return undefined;
  return { operationId, status: json.status, legs };
}

/**
 * The connector for the sandbox provider protocol (see services/sandbox-provider/README.md):
 * JSON over HTTP with `Authorization: Bearer <credentials>`, the gateway's operation_id as
 * the idempotent `reference`, and result callbacks signed with HMAC-SHA256 over
 * `<timestamp>.<body>` keyed by the same credentials.
 */
export class SandboxConnector implements Connector {
  /**
   * A 4xx refusal of the request (other than 408) is a decline: the provider has not taken
   * it; so is an "accepted" repeat whose operation the provider has since withdrawn or
   * rejected. Everything else that is not a decision is `unknown`, never a decline: the signal
   * aborted first, the transport failed (the request may have arrived), a 408 or 5xx, or an
   * answer that cannot be read.
   */
  async create(
    provider: ProviderConfig,
    req: ProviderCreateRequest,
    signal: AbortSignal,
  ): Promise<ProviderAnswer> {
    const body: Json = {
      reference: req.operationId,
      method: req.method,
      amount: req.amount,
      currency: req.currency,
      callback_url: req.callbackUrl,
    };
    if (req.direction === "payout") {
      const destination: Json = { number: req.number ?? "" };
      if (req.name) destination.name = req.name;
      if (req.bankname) destination.bankname = req.bankname;
      body.destination = destination;
    }
    let answer: { status: number; json: unknown };
    try {
      answer = await this.#call(
        provider,
        providerUrl(provider, req.direction === "payin" ? "payins" : "payouts"),
        "POST",
        signal,
        JSON.stringify(body),
      );
    } catch (err) {
      return { outcome: "unknown", reason: transportReason(err, signal) };
    }
    try {
      return this.#decision(req, answer.status, answer.json);
    } catch (err) {
      return { outcome: "unknown", reason: String(err instanceof Error ? err.message : err) };
    }
  }

  /** Reads a create answer; throws ProviderRequestError for one that is not a decision. */
  #decision(req: ProviderCreateRequest, status: number, json: unknown): ProviderAnswer {
    if (status >= 400 && status < 500 && status !== 408) {
      const code = isObject(json) && isObject(json.error) ? optionalString(json.error.code) : undefined;
      return { outcome: "declined", reason: code ?? `http_${status}` };
    }
    if (status !== 200 || !isObject(json)) throw this.#unexpected(status, json);
    if (json.reference !== req.operationId)
      throw new ProviderRequestError("answer for another reference", status);
    if (json.decision === "declined") {
      return { outcome: "declined", reason: optionalString(json.reason) ?? "declined" };
    }
    if (json.decision !== "accepted" || typeof json.receipt_required !== "boolean") {
      throw new ProviderRequestError("answer without a decision", status);
    }
    // A repeated create answers the operation as the provider holds it now: one it has
    // withdrawn or rejected since takes no money, whatever its first decision was.
    if (json.status === "withdrawn" || json.status === "rejected") {
      return { outcome: "declined", reason: json.status };
    }
    const answer: Extract<ProviderAnswer, { outcome: "accepted" }> = {
      outcome: "accepted",
      receiptRequired: json.receipt_required,
    };
    if (req.direction === "payin") {
      const r = json.requisites;
      const number = isObject(r) ? optionalString(r.number) : undefined;
      if (!isObject(r) || number === undefined)
        throw new ProviderRequestError("payin accepted without requisites", status);
      const requisites: { number: string; name?: string; bankname?: string } = { number };
      const name = optionalString(r.name);
      const bankname = optionalString(r.bankname);
      if (name !== undefined) requisites.name = name;
      if (bankname !== undefined) requisites.bankname = bankname;
      answer.requisites = requisites;
    }
    if (json.expires_at !== undefined) {
      const expiresAt = typeof json.expires_at === "string" ? new Date(json.expires_at) : undefined;
      if (!expiresAt || Number.isNaN(expiresAt.getTime()))
        throw new ProviderRequestError("bad expires_at", status);
      answer.expiresAt = expiresAt;
    }
    return answer;
  }

  /**
   * Verifies the signature in constant time against the provider's credentials, refuses
   * timestamps older than 5 minutes or more than 1 minute ahead of `now`, then parses the
   * body. Throws CallbackRejectedError for any of these failures.
   */
  parseCallback(
    provider: ProviderConfig,
    body: Uint8Array,
    headers: Record<string, string>,
    now: Date,
  ): ProviderResult & { callbackId: string } {
    const raw = header(headers, SIGNATURE_HEADER);
    const parsed = raw === undefined ? undefined : parseSignatureHeader(raw);
    if (!parsed) throw new CallbackRejectedError("missing or malformed signature header");
    const age = Math.floor(now.getTime() / 1000) - parsed.timestamp;
    if (age > MAX_CALLBACK_AGE_SECONDS) throw new CallbackRejectedError("callback signature is too old");
    if (-age > MAX_CALLBACK_SKEW_SECONDS)
      throw new CallbackRejectedError("callback signature is from the future");

    const expected = createHmac("sha256", provider.credentials)
      .update(`${parsed.timestamp}.`)
      .update(body)
      .digest();
    const valid = parsed.signatures.some((hex) => timingSafeEqual(Buffer.from(hex, "hex"), expected));
    if (!valid) throw new CallbackRejectedError("callback signature does not match");

    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
    } catch {
      throw new CallbackRejectedError("callback body is not JSON");
    }
    if (!isObject(json)) throw new CallbackRejectedError("callback body is not an object");
    const callbackId = optionalString(json.callback_id);
    if (callbackId === undefined || callbackId.length > 128)
      throw new CallbackRejectedError("callback without callback_id");
    if (typeof json.reference !== "string" || !UUID.test(json.reference)) {
      throw new CallbackRejectedError("callback reference is not an operation id");
    }
    if (json.status !== "completed" && json.status !== "rejected")
      throw new CallbackRejectedError("callback status unknown");
    const legs = parseLegs(json.legs);
    if (!legs) throw new CallbackRejectedError("callback legs malformed");
    // A completion without legs is taken as the status read takes it: the operation's
    // amount, shown as one synthetic contribution (receipt evidence `partial`).
    return { callbackId, operationId: json.reference.toLowerCase(), status: json.status, legs };
  }

  /**
   * Reads the provider's view of an operation. A 404 is the definite `not_found` (the
   * provider never received it); an abort, a transport error, any other status or an
   * unreadable body is `unknown`.
   */
  async status(provider: ProviderConfig, operationId: string, signal: AbortSignal): Promise<ProviderStatus> {
    const url = providerUrl(provider, `operations/${encodeURIComponent(operationId)}`);
    let answer: { status: number; json: unknown };
    try {
      answer = await this.#call(provider, url, "GET", signal);
    } catch (err) {
      return { status: "unknown", reason: transportReason(err, signal) };
    }
    const { status, json } = answer;
    if (status === 404 && isObject(json) && isObject(json.error) && json.error.code === "not_found") {
      return { status: "not_found" };
    }
    if (status !== 200 || !isObject(json))
      return { status: "unknown", reason: this.#unexpected(status, json).message };
    const view = readView(operationId, json);
    return view ?? { status: "unknown", reason: "unreadable operation status" };
  }

  /**
   * Withdraws an operation: `POST operations/{reference}/withdraw`, with the direction
   * when given. The provider answers its view of the operation after the request
   * (`withdrawn`, also for a reference it has no record of once it tombstoned it, or the
   * final result it had reached before), 404 for a reference it never received and did not
   * tombstone, 501 when it offers no withdrawal; anything else is `unknown`.
   */
  async cancel(
    provider: ProviderConfig,
    operationId: string,
    signal: AbortSignal,
    direction?: "payin" | "payout",
  ): Promise<WithdrawAnswer> {
    const url = providerUrl(provider, `operations/${encodeURIComponent(operationId)}/withdraw`);
    let answer: { status: number; json: unknown };
    try {
      answer = await this.#call(
        provider,
        url,
        "POST",
        signal,
        JSON.stringify(direction ? { direction } : {}),
      );
    } catch (err) {
      return { outcome: "unknown", reason: transportReason(err, signal) };
    }
    const { status, json } = answer;
    const code = isObject(json) && isObject(json.error) ? json.error.code : undefined;
    if (status === 404 && code === "not_found") return { outcome: "not_found" };
    if (status === 501 && code === "not_supported") return { outcome: "not_supported" };
    if (status !== 200 || !isObject(json))
      return { outcome: "unknown", reason: this.#unexpected(status, json).message };
    const view = readView(operationId, json);
    if (!view || view.status === "unknown" || view.status === "not_found" || view.status === "pending") {
      return { outcome: "unknown", reason: "withdrawal answered without a final state" };
    }
    if (view.status === "withdrawn") return { outcome: "withdrawn" };
    return { outcome: "final", result: view };
  }

  async #call(
    provider: ProviderConfig,
    url: URL,
    method: "GET" | "POST",
    signal: AbortSignal,
    body?: string,
  ): Promise<{ status: number; json: unknown }> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${provider.credentials}`,
      accept: "application/json",
    };
    if (body !== undefined) headers["content-type"] = "application/json";
    const end = providerDuration.startTimer({ provider: provider.name, method });
    let text: string;
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(url, { method, headers, body, signal });
      text = await res.body.text();
    } catch (err) {
      end({ outcome: "error" });
      throw err;
    }
    end({ outcome: String(res.statusCode) });
    let json: unknown;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, json };
  }

  #unexpected(status: number, json: unknown): ProviderRequestError {
    const code = isObject(json) && isObject(json.error) ? optionalString(json.error.code) : undefined;
    return new ProviderRequestError(`provider answered ${status}${code ? ` (${code})` : ""}`, status, code);
  }
}
