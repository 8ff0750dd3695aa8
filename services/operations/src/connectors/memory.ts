import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { Decimal } from "@gw/money";
import {
  CallbackRejectedError,
  type Connector,
  type ProviderAnswer,
  type ProviderConfig,
  type ProviderCreateRequest,
  type ProviderResult,
  type ProviderStatus,
  type WithdrawAnswer,
} from "./connector.ts";

/** How a provider treats one direction's creates: the sandbox's control settings, by the same names. */
export interface MemoryBehaviour {
  mode?: "accept" | "decline" | "no_answer";
  receipt_required?: boolean;
  expires_in_seconds?: number;
  decline_reason?: string;
  /** The answer comes this late (the operation is taken at once). */
  delay_ms?: number;
  withdraw?: "unsupported" | "failing";
}

interface Operation {
  direction: "payin" | "payout";
  decision: "accept" | "decline" | "no_answer";
  requests: number;
  destination: Record<string, string> | null;
  answer: ProviderAnswer | undefined;
  state: "pending" | "completed" | "rejected" | "withdrawn" | "declined";
  legs: ProviderResult["legs"];
}

/** The header a memory provider's callback is signed in: `t=<unix seconds>,v1=<hex>`. */
export const MEMORY_SIGNATURE_HEADER = "x-memory-signature";
const MAX_AGE_SECONDS = 300;
const MAX_SKEW_SECONDS = 60;

const sign = (credentials: string, t: number, body: Uint8Array) =>
  createHmac("sha256", credentials).update(`${t}.`).update(body).digest();

const digits = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 10)).join("");

/**
 * Providers in memory, behind the connector interface, for tests that start no provider:
 * each keeps its operations and answers as the sandbox provider would (same contract,
 * connectors/connector.contract.ts). `register` configures one (kind `memory`), `settle`
 * completes or rejects an operation there and returns the signed callback it would post.
 * A provider that was never registered cannot be reached: every question is `unknown`.
 */
export class MemoryConnector implements Connector {
  readonly #providers = new Map<
    string,
    {
      credentials: string;
      payin: MemoryBehaviour;
      payout: MemoryBehaviour;
      operations: Map<string, Operation>;
    }
  >();

  /** Configures provider `name` (again: replaces its settings, keeps its operations). */
  register(
    name: string,
    settings: { payin?: MemoryBehaviour; payout?: MemoryBehaviour } = {},
    credentials = `credentials-of-${name}-${randomUUID()}`,
  ): ProviderConfig {
    const operations = this.#providers.get(name)?.operations ?? new Map();
    this.#providers.set(name, {
      credentials,
      payin: settings.payin ?? {},
      payout: settings.payout ?? {},
      operations,
    });
    return {
      name,
      kind: "memory",
      baseUrl: `memory://${name}`,
      credentials,
      methods: ["WT_RUB_C2C", "WT_RUB_PHONE"],
    };
  }

  /** What provider `name` received for an operation. */
  received(name: string, operationId: string) {
    const op = this.#providers.get(name)?.operations.get(operationId);
    return op ? [{ decision: op.decision, requests: op.requests, destination: op.destination }] : [];
  }

  /** Settles an operation at provider `name`: the callback it sends, or its refusal's code. */
  settle(
    name: string,
    operationId: string,
    result: { legs: string[] } | { status: "rejected" },
    now = new Date(),
  ):
    | { callback: { body: Uint8Array; headers: Record<string, string>; signedAt: Date; callbackId: string } }
    | { refused: string } {
    const p = this.#providers.get(name);
    const op = p?.operations.get(operationId);
    if (!p || !op || op.state === "declined") return { refused: "not_found" };
    if (op.state === "withdrawn") return { refused: "withdrawn" };
    if (op.state !== "pending") return { refused: "already_settled" };
    if ("legs" in result) {
      op.state = "completed";
      op.legs = result.legs.map((amount) => ({
        id: randomUUID(),
        amount: new Decimal(amount).toFixed(2),
        completedAt: now,
      }));
    } else op.state = "rejected";
    const callbackId = randomUUID();
    const body = new TextEncoder().encode(
      JSON.stringify({
        callback_id: callbackId,
        operation_id: operationId,
        status: op.state,
        legs: op.legs.map((l) => ({ id: l.id, amount: l.amount, completed_at: l.completedAt.toISOString() })),
      }),
    );
    const t = Math.floor(now.getTime() / 1000);
    const headers = {
      [MEMORY_SIGNATURE_HEADER]: `t=${t},v1=${sign(p.credentials, t, body).toString("hex")}`,
    };
    return { callback: { body, headers, signedAt: new Date(t * 1000), callbackId } };
  }

  async create(
    provider: ProviderConfig,
    request: ProviderCreateRequest,
    signal: AbortSignal,
  ): Promise<ProviderAnswer> {
    const p = this.#providers.get(provider.name);
    if (!p) return { outcome: "unknown", reason: `provider ${provider.name} cannot be reached` };
    if (p.credentials !== provider.credentials) return { outcome: "declined", reason: "unauthorized" };
    const seen = p.operations.get(request.operationId);
    if (seen) {
      seen.requests += 1;
      if (seen.state === "withdrawn" || seen.state === "rejected")
        return { outcome: "declined", reason: seen.state };
      if (seen.answer) return seen.answer;
      return waitOut(signal, "the provider did not answer");
    }
    const behaviour = p[request.direction];
    const decision = behaviour.mode ?? "accept";
    const op: Operation = {
      direction: request.direction,
      decision,
      requests: 1,
      destination:
        request.direction === "payout"
          ? Object.fromEntries(
              Object.entries({
                number: request.number,
                name: request.name,
                bankname: request.bankname,
              }).filter((e): e is [string, string] => e[1] !== undefined),
            )
          : null,
      answer: undefined,
      state: decision === "accept" ? "pending" : decision === "decline" ? "declined" : "pending",
      legs: [],
    };
    p.operations.set(request.operationId, op);
    if (decision === "no_answer") return waitOut(signal, "the provider did not answer");
    op.answer =
      decision === "decline"
        ? { outcome: "declined", reason: behaviour.decline_reason ?? "declined" }
        : accepted(request, behaviour);
    if (behaviour.delay_ms) {
      const late = await Promise.race([
        new Promise<"late">((r) => setTimeout(() => r("late"), behaviour.delay_ms)),
        waitOut(signal, "the caller gave up before the provider answered"),
      ]);
      if (late !== "late") return late;
    }
    return op.answer;
  }

  parseCallback(
    provider: ProviderConfig,
    body: Uint8Array,
    headers: Record<string, string>,
    now: Date,
  ): ProviderResult & { callbackId: string } {
    const parsed = /^t=(\d+),v1=([0-9a-f]+)$/.exec(headers[MEMORY_SIGNATURE_HEADER] ?? "");
    if (!parsed) throw new CallbackRejectedError("missing or malformed signature header");
    const t = Number(parsed[1]);
    const age = now.getTime() / 1000 - t;
    if (age > MAX_AGE_SECONDS) throw new CallbackRejectedError("callback signature is too old");
    if (-age > MAX_SKEW_SECONDS) throw new CallbackRejectedError("callback signature is from the future");
    const given = Buffer.from(parsed[2] ?? "", "hex");
    const expected = sign(provider.credentials, t, body);
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      throw new CallbackRejectedError("callback signature does not match");
    const json = JSON.parse(new TextDecoder().decode(body)) as {
      callback_id: string;
      operation_id: string;
      status: "completed" | "rejected";
      legs: { id: string; amount: string; completed_at: string }[];
    };
    return {
      callbackId: json.callback_id,
      operationId: json.operation_id,
      status: json.status,
      legs: json.legs.map((l) => ({ id: l.id, amount: l.amount, completedAt: new Date(l.completed_at) })),
    };
  }

  async status(provider: ProviderConfig, operationId: string): Promise<ProviderStatus> {
    const p = this.#providers.get(provider.name);
    if (!p) return { status: "unknown", reason: `provider ${provider.name} cannot be reached` };
    const op = p.operations.get(operationId);
    if (!op || op.state === "declined") return { status: "not_found" };
    if (op.state === "pending" || op.state === "withdrawn") return { status: op.state };
    return { operationId, status: op.state, legs: [...op.legs] };
  }

  async cancel(
    provider: ProviderConfig,
    operationId: string,
    _signal: AbortSignal,
    direction?: "payin" | "payout",
  ): Promise<WithdrawAnswer> {
    const p = this.#providers.get(provider.name);
    if (!p) return { outcome: "unknown", reason: `provider ${provider.name} cannot be reached` };
    const op = p.operations.get(operationId);
    if (!op || op.state === "declined") {
      if (!direction) return { outcome: "not_found" };
      // Withdrawal by key: the key is tombstoned, so a create still on its way is refused.
      p.operations.set(operationId, {
        direction,
        decision: "accept",
        requests: 0,
        destination: null,
        answer: undefined,
        state: "withdrawn",
        legs: [],
      });
      return { outcome: "withdrawn" };
    }
    const withdraw = p[op.direction].withdraw;
    if (op.state === "completed" || op.state === "rejected")
      return { outcome: "final", result: { operationId, status: op.state, legs: [...op.legs] } };
    if (withdraw === "unsupported") return { outcome: "not_supported" };
    if (withdraw === "failing") return { outcome: "unknown", reason: "the provider failed to withdraw" };
    op.state = "withdrawn";
    return { outcome: "withdrawn" };
  }
}

function accepted(request: ProviderCreateRequest, behaviour: MemoryBehaviour): ProviderAnswer {
  const receiptRequired = request.direction === "payin" && behaviour.receipt_required === true;
  const expiresAt = behaviour.expires_in_seconds
    ? new Date(Date.now() + behaviour.expires_in_seconds * 1000)
    : undefined;
  const requisites =
    request.direction === "payout"
      ? undefined
      : request.method.endsWith("_PHONE")
        ? { number: `+7${digits(10)}`, bankname: "sberbank" }
        : { number: digits(16) };
  return {
    outcome: "accepted",
    ...(requisites ? { requisites } : {}),
    receiptRequired,
    ...(expiresAt ? { expiresAt } : {}),
  };
}

/** `unknown` once `signal` aborts: a provider that has not answered may still have taken the operation. */
function waitOut(signal: AbortSignal, reason: string): Promise<ProviderAnswer & { outcome: "unknown" }> {
  return new Promise((resolve) => {
    const done = () => resolve({ outcome: "unknown", reason });
    if (signal.aborted) done();
    else signal.addEventListener("abort", done, { once: true });
  });
}
