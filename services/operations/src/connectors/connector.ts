/**
 * The one interface between operations and every payment provider. A connector speaks
 * one provider protocol; a real provider and the sandbox are reached the same way.
 */

/** A provider as registered through the admin API (`PUT /admin/v1/providers/{name}`). */
export interface ProviderConfig {
  name: string;
  /** Connector kind, which selects the implementation ("sandbox"). */
  kind: string;
  baseUrl: string;
  /** Shared secret: authenticates our calls and the provider's callbacks. Never logged. */
  credentials: string;
  methods: string[];
}

export interface ProviderCreateRequest {
  /** The gateway's operation_id, the provider's reference for the operation. */
  operationId: string;
  direction: "payin" | "payout";
  method: string;
  /** Decimal string, scale 2. */
  amount: string;
  currency: string;
  number?: string;
  name?: string;
  bankname?: string;
  /** Where the provider posts its result. */
  callbackUrl: string;
}

export type ProviderAnswer =
  | {
      outcome: "accepted";
      /** The destination the payer pays to (payins); absent for payouts. */
      requisites?: { number: string; name?: string; bankname?: string };
      receiptRequired: boolean;
      /** Only when the provider reports a real expiry of the payable window. */
      expiresAt?: Date;
    }
  | { outcome: "declined"; reason: string };

/** One completed physical part of an operation at the provider. */
export interface ProviderLeg {
  id: string;
  /** Decimal string, scale 2. */
  amount: string;
  completedAt: Date;
}

export interface ProviderResult {
  operationId: string;
  status: "completed" | "rejected";
  legs: ProviderLeg[];
}

/** Thrown when a callback's signature, timestamp or shape is not acceptable. */
export class CallbackRejectedError extends Error {
  override readonly name = "CallbackRejectedError";
}

export interface Connector {
  /**
   * Asks the provider to take the operation. Resolves with its answer; rejects when the
   * provider did not answer before `signal` aborted or the transport failed, which the
   * router treats like a decline and moves on.
   */
  create(
    provider: ProviderConfig,
    request: ProviderCreateRequest,
    signal: AbortSignal,
  ): Promise<ProviderAnswer>;
  /**
   * Verifies and parses a result callback. Throws CallbackRejectedError for a bad or
   * stale signature. `callbackId` identifies the callback, so a replay is recognised.
   */
  parseCallback(
    provider: ProviderConfig,
    body: Uint8Array,
    headers: Record<string, string>,
    now: Date,
  ): ProviderResult & { callbackId: string };
  /** Asks for the current result of an operation (the reconciler's question). */
  status(
    provider: ProviderConfig,
    operationId: string,
    signal: AbortSignal,
  ): Promise<ProviderResult | { status: "pending" }>;
}
