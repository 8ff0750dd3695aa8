import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import { Code, type ConnectError, failure, type PublicErrorCode } from "@gw/rpc";
import { type DomainError, DomainErrorCode, isDomainError } from "./errors.ts";

/** How one domain error reaches a client: its Connect code and the public error code. */
export interface CatalogueEntry {
  connect: Code;
  public: PublicErrorCode;
  /** An error that only a bug lets out of the service: logged with its cause, answered as `internal`. */
  bug?: true;
}

/**
 * The one mapping of the service's domain errors to Connect codes and public codes (the
 * edge maps Connect codes to HTTP statuses). A new error class cannot be added without
 * its row here: the record is keyed by every code.
 */
export const CATALOGUE: Readonly<Record<DomainErrorCode, CatalogueEntry>> = {
  [DomainErrorCode.LifecycleViolation]: { connect: Code.Internal, public: "internal", bug: true },
  [DomainErrorCode.NotRouted]: { connect: Code.Internal, public: "internal", bug: true },
  [DomainErrorCode.AlreadyTerminal]: { connect: Code.Internal, public: "internal", bug: true },
  [DomainErrorCode.LegsDisagree]: { connect: Code.Internal, public: "internal", bug: true },
  [DomainErrorCode.OperationNotFound]: { connect: Code.NotFound, public: "operation_not_found" },
  [DomainErrorCode.Validation]: { connect: Code.InvalidArgument, public: "validation_failed" },
  [DomainErrorCode.NotCancellable]: { connect: Code.FailedPrecondition, public: "not_cancellable" },
  [DomainErrorCode.NotAwaitingConfirmation]: {
    connect: Code.FailedPrecondition,
    public: "not_awaiting_confirmation",
  },
  [DomainErrorCode.NotInManualCheck]: { connect: Code.FailedPrecondition, public: "not_in_manual_check" },
  [DomainErrorCode.ConcurrentChange]: { connect: Code.Aborted, public: "dependency_unavailable" },
  [DomainErrorCode.DependencyUnavailable]: { connect: Code.Unavailable, public: "dependency_unavailable" },
  [DomainErrorCode.ProviderNotFound]: { connect: Code.NotFound, public: "provider_not_found" },
  [DomainErrorCode.BadSignature]: { connect: Code.Unauthenticated, public: "bad_signature" },
  [DomainErrorCode.ReceiptEvidenceUnavailable]: {
    connect: Code.Unavailable,
    public: "receipt_evidence_unavailable",
  },
  [DomainErrorCode.StillRouting]: { connect: Code.Unavailable, public: "dependency_unavailable" },
  [DomainErrorCode.IdempotencyConflict]: { connect: Code.FailedPrecondition, public: "idempotency_conflict" },
  [DomainErrorCode.RouteNotConfigured]: { connect: Code.FailedPrecondition, public: "route_not_configured" },
  [DomainErrorCode.PricingNotConfigured]: {
    connect: Code.FailedPrecondition,
    public: "pricing_not_configured",
  },
  [DomainErrorCode.FxRateMissing]: { connect: Code.FailedPrecondition, public: "fx_rate_missing" },
  [DomainErrorCode.NoProviderAccepted]: { connect: Code.Unavailable, public: "no_provider_accepted" },
  [DomainErrorCode.FlexibleRouteNotPool]: {
    connect: Code.FailedPrecondition,
    public: "flexible_route_not_pool",
  },
  [DomainErrorCode.FlexibleLinkNotFound]: { connect: Code.NotFound, public: "flexible_link_not_found" },
  [DomainErrorCode.ProviderFactNotFound]: { connect: Code.NotFound, public: "provider_fact_not_found" },
  [DomainErrorCode.ProviderFactAlreadyResolved]: {
    connect: Code.FailedPrecondition,
    public: "provider_fact_already_resolved",
  },
  [DomainErrorCode.ProviderFactNotCreditable]: {
    connect: Code.FailedPrecondition,
    public: "provider_fact_not_creditable",
  },
};

/** The Connect error a client receives for `err`. A bug's cause stays in the log. */
export function toConnectError(err: DomainError, logger: Logger, method: string): ConnectError {
  const entry = CATALOGUE[err.code];
  if (entry.bug) {
    logger.error({ err, code: err.code, method }, "a domain error escaped to the handler boundary");
    return failure(entry.connect, entry.public, "internal error");
  }
  return failure(entry.connect, entry.public, err.message, err.field);
}

/**
 * Wraps a service implementation so that every domain error its unary methods throw is
 * answered through the catalogue; any other error (a dependency's refusal passed on as it
 * came, see `dependency-errors.ts`, or an unexpected throw) passes through unchanged.
 */
export function withErrorCatalogue<S extends DescService>(
  service: S,
  impl: ServiceImpl<S>,
  logger: Logger,
): ServiceImpl<S> {
  const wrapped: Record<string, unknown> = {};
  const methods = impl as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const method of service.methods) {
    const fn = methods[method.localName];
    if (typeof fn !== "function") continue;
    wrapped[method.localName] =
      method.methodKind === "unary"
        ? async (...args: unknown[]) => {
            try {
              return await fn.apply(impl, args);
            } catch (err) {
              throw isDomainError(err) ? toConnectError(err, logger, method.name) : err;
            }
          }
        : fn.bind(impl);
  }
  return wrapped as ServiceImpl<S>;
}
