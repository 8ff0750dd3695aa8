import type { OperationRow } from "../domain/model.ts";
import type { ProviderConfig } from "../domain/providers.ts";

/**
 * The one interface between operations and every payment provider. A connector speaks
 * one provider protocol; a real provider and the sandbox are reached the same way.
 */

export type { ProviderConfig };

export interface ProviderCreateRequest {
  /** The gateway's operation_id, the provider's reference for the operation. */
  operationId: string;
  /** The merchant's shop (the pool records it with a payout and a slot). */
  shopId: string;
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
  /**
   * The operation's version at this routing attempt. The pool refuses an attempt at or
   * below a release of the payin (a late Admit of an attempt already withdrawn).
   */
  generation?: bigint;
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
  | { outcome: "declined"; reason: string }
  /**
   * The provider may or may not have taken the operation: the request timed out or was
   * abandoned, the connection failed after the request was sent, the provider answered a
   * 5xx, or its answer could not be read. Money may have moved: the caller asks `status`
   * until it knows, and never treats this as a decline.
   */
  | { outcome: "unknown"; reason: string };

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

/**
 * The provider's answer to the status question (`Connector.status`): a final result, still
 * pending, `not_found` (the provider has no record of the operation: yet, perhaps; never a
 * decline, since a create may still be on its way there), `withdrawn` (withdrawn at the
 * gateway's request, or its key tombstoned: no money will move), or `unknown` (no readable
 * answer: ask again later).
 */
export type ProviderStatus =
  | ProviderResult
  | { status: "pending" }
  | { status: "not_found" }
  | { status: "withdrawn" }
  | { status: "unknown"; reason: string };

/**
 * The provider's answer to a withdrawal (`Connector.cancel`): the requisites are withdrawn
 * and no money will move (`withdrawn`, also when it was withdrawn before); the provider had
 * already reached a final result, which the caller must apply like any other result
 * (`final`); the provider never received the operation (`not_found`); the provider offers
 * no withdrawal (`not_supported`); or no readable answer (`unknown`: it may or may not be
 * withdrawn). Whatever still arrives after anything but `withdrawn` and `not_found` is a
 * provider fact the gateway records.
 */
export type WithdrawAnswer =
  | { outcome: "withdrawn" }
  | { outcome: "final"; result: ProviderResult }
  | { outcome: "not_found" }
  | { outcome: "not_supported" }
  | { outcome: "unknown"; reason: string };

/** Thrown when a callback's signature, timestamp or shape is not acceptable. */
export class CallbackRejectedError extends Error {
  override readonly name = "CallbackRejectedError";
}

export interface Connector {
  /**
   * Asks the provider to take the operation. Never rejects: every failure to get a
   * decision (abort of `signal`, transport error, 5xx, unreadable answer) resolves
   * `unknown`, which means the provider may have taken it.
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
  /**
   * Asks for the current state of an operation (the reconciler's and the cascade's
   * question). Never rejects: no readable answer resolves `unknown`.
   */
  status(provider: ProviderConfig, operationId: string, signal: AbortSignal): Promise<ProviderStatus>;
  /**
   * Asks the provider to withdraw the operation (cancel and expiry of a payin: the
   * requisites must stop taking money; a payout the provider has no record of: its key is
   * tombstoned, so a create still on its way there is refused). With `direction`, a
   * provider that offers withdrawal by key answers `withdrawn` for a key it has no record
   * of (a confirmed withdrawal); without it, `not_found`. Never rejects: no readable
   * answer is `unknown`.
   */
  cancel(
    provider: ProviderConfig,
    operationId: string,
    signal: AbortSignal,
    direction?: "payin" | "payout",
  ): Promise<WithdrawAnswer>;
  /**
   * What the provider needs only once the create has committed its acceptance (`row` is
   * the operation as recorded, under this provider): asked once, right after that commit,
   * best-effort. Never rejects; whatever must not be lost follows from the committed
   * state's event as well.
   */
  recorded?(provider: ProviderConfig, row: OperationRow): Promise<void>;
}
