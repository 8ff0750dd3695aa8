/**
 * The operations service's domain errors: named classes with a stable `code`, raised by
 * the lifecycle, the repository and the use cases, and translated to Connect errors once,
 * at the handler boundary (`catalogue.ts`). Nothing branches on an error's message.
 */

/** Every domain error code of the service. The catalogue maps each one to a Connect code. */
export const DomainErrorCode = {
  LifecycleViolation: "lifecycle_violation",
  OperationNotFound: "operation_not_found",
  Validation: "validation_failed",
  NotCancellable: "not_cancellable",
  NotAwaitingConfirmation: "not_awaiting_confirmation",
  NotInManualCheck: "not_in_manual_check",
  ConcurrentChange: "operation_changed",
  DependencyUnavailable: "dependency_unavailable",
  ProviderNotFound: "provider_not_found",
  BadSignature: "bad_signature",
  ReceiptEvidenceUnavailable: "receipt_evidence_unavailable",
  StillRouting: "still_routing",
  NotRouted: "not_routed",
  AlreadyTerminal: "already_terminal",
  IdempotencyConflict: "idempotency_conflict",
  LegsDisagree: "legs_disagree",
  RouteNotConfigured: "route_not_configured",
  PricingNotConfigured: "pricing_not_configured",
  FxRateMissing: "fx_rate_missing",
  NoProviderAccepted: "no_provider_accepted",
  FlexibleRouteNotPool: "flexible_route_not_pool",
  FlexibleLinkNotFound: "flexible_link_not_found",
  ProviderFactNotFound: "provider_fact_not_found",
  ProviderFactAlreadyResolved: "provider_fact_already_resolved",
  ProviderFactNotCreditable: "provider_fact_not_creditable",
} as const;

export type DomainErrorCode = (typeof DomainErrorCode)[keyof typeof DomainErrorCode];

/** The base of every domain error: a stable code, a message for operators, an optional field. */
export abstract class DomainError extends Error {
  abstract readonly code: DomainErrorCode;
  /** The request field at fault, when there is one (validation). */
  readonly field: string | undefined;

  constructor(message: string, field?: string) {
    super(message);
    this.name = new.target.name;
    this.field = field;
  }
}

/** A write that would move an operation along an edge its lifecycle table does not have. */
export class LifecycleViolationError extends DomainError {
  readonly code = DomainErrorCode.LifecycleViolation;
  readonly from: string;
  readonly to: string;

  constructor(operationId: string, from: string, to: string, fact?: string) {
    super(
      `operation ${operationId}: ${from} → ${to}${fact ? ` on ${fact}` : ""} is not in the lifecycle table`,
    );
    this.from = from;
    this.to = to;
  }
}

/** No operation with that id (or key) in the caller's scope, or none a reader may see. */
export class OperationNotFoundError extends DomainError {
  readonly code = DomainErrorCode.OperationNotFound;
  constructor() {
    super("operation not found");
  }
}

/** A request field is missing or malformed. */
export class ValidationError extends DomainError {
  readonly code = DomainErrorCode.Validation;
  constructor(message: string, field?: string) {
    super(message, field);
  }
}

/** A cancel of a payout, or of a payment that is no longer cancellable (manual_check). */
export class NotCancellableError extends DomainError {
  readonly code = DomainErrorCode.NotCancellable;
}

/** A receipt for an operation that is not awaiting one. */
export class NotAwaitingConfirmationError extends DomainError {
  readonly code = DomainErrorCode.NotAwaitingConfirmation;
}

/** An operator's decision on a payment that is not in manual_check. */
export class NotInManualCheckError extends DomainError {
  readonly code = DomainErrorCode.NotInManualCheck;
}

/** The row's version moved on between the read and the write: the caller retries. */
export class ConcurrentChangeError extends DomainError {
  readonly code = DomainErrorCode.ConcurrentChange;
  constructor(message = "operation changed concurrently; retry") {
    super(message);
  }
}

/** A service we depend on did not answer usefully: the caller retries later. */
export class DependencyUnavailableError extends DomainError {
  readonly code = DomainErrorCode.DependencyUnavailable;
}

/** A callback or a configuration names a provider nobody registered. */
export class ProviderNotFoundError extends DomainError {
  readonly code = DomainErrorCode.ProviderNotFound;
  constructor() {
    super("unknown provider");
  }
}

/** A provider callback whose signature does not verify. */
export class BadSignatureError extends DomainError {
  readonly code = DomainErrorCode.BadSignature;
  constructor() {
    super("callback signature rejected");
  }
}

/** Receipt links could not be signed for a read by operation id. */
export class ReceiptEvidenceUnavailableError extends DomainError {
  readonly code = DomainErrorCode.ReceiptEvidenceUnavailable;
  constructor() {
    super("receipt evidence is temporarily unavailable, retry later");
  }
}

/** A provider called back before the create recorded its answer: the provider retries. */
export class StillRoutingError extends DomainError {
  readonly code = DomainErrorCode.StillRouting;
  constructor() {
    super("the operation is still being routed; retry");
  }
}

/** A provider result for an operation not routed to that provider. */
export class NotRoutedError extends DomainError {
  readonly code = DomainErrorCode.NotRouted;
}

/** A fact for an operation that already reached a terminal status. */
export class AlreadyTerminalError extends DomainError {
  readonly code = DomainErrorCode.AlreadyTerminal;
}

/** A key already used with a different request. */
export class IdempotencyConflictError extends DomainError {
  readonly code = DomainErrorCode.IdempotencyConflict;
}

/** A completion whose actual amount is less than its recorded legs: money would go unbooked. */
export class LegsDisagreeError extends DomainError {
  readonly code = DomainErrorCode.LegsDisagree;
  constructor(operationId: string, actual: string, legs: string) {
    super(`operation ${operationId}: actual amount ${actual} is less than its legs' ${legs}`);
  }
}

/** The shop has no route of that direction for the method. */
export class RouteNotConfiguredError extends DomainError {
  readonly code = DomainErrorCode.RouteNotConfigured;
  constructor(direction: string, method: string) {
    super(`no ${direction} route for method ${method}`);
  }
}

/**
 * The shop's pricing cannot price the operation: no tier covers the amount, or no rate to
 * the settlement currency. The ledger's own refusal, priced here from its terms.
 */
export class PricingRefusedError extends DomainError {
  readonly code: typeof DomainErrorCode.PricingNotConfigured | typeof DomainErrorCode.FxRateMissing;
  constructor(refusal: "pricing_not_configured" | "fx_rate_missing", message: string, field?: string) {
    super(message, field);
    this.code = refusal;
  }
}

/** A create that no provider accepted: recorded `rejected`, answered as the spec's 503, never a pending. */
export class NoProviderAcceptedError extends DomainError {
  readonly code = DomainErrorCode.NoProviderAccepted;
  constructor() {
    super("no provider accepted the operation");
  }
}

/** A flexible link for a shop whose payin route for the method is not entirely the pool. */
export class FlexibleRouteNotPoolError extends DomainError {
  readonly code = DomainErrorCode.FlexibleRouteNotPool;
  constructor() {
    super("the shop's payin route for this method is not entirely the self-matching pool");
  }
}

/** No flexible link with that id and credential (a wrong `k` looks like an unknown id). */
export class FlexibleLinkNotFoundError extends DomainError {
  readonly code = DomainErrorCode.FlexibleLinkNotFound;
  constructor() {
    super("link not found");
  }
}

/** Whether `err` is one of the service's domain errors. */
export const isDomainError = (err: unknown): err is DomainError => err instanceof DomainError;
/** Whether `err` refused a write outside the lifecycle table. */
export const isLifecycleViolation = (err: unknown): err is LifecycleViolationError =>
  err instanceof LifecycleViolationError;
/** Whether `err` says the operation was already terminal. */
export const isAlreadyTerminal = (err: unknown): err is AlreadyTerminalError =>
  err instanceof AlreadyTerminalError;
/** Whether `err` says the provider does not hold the operation. */
export const isNotRouted = (err: unknown): err is NotRoutedError => err instanceof NotRoutedError;
