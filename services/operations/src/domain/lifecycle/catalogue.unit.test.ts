import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { Code, ConnectError } from "@connectrpc/connect";
import { createLogger } from "@gw/log";
import { OperationsService } from "@gw/proto/gateway/operations/v1/operations_pb";
import { errorInfo, failure, type PublicErrorCode } from "@gw/rpc";
import { describe, expect, it } from "vitest";
import type { OperationsHandlers } from "../../handlers.ts";
import {
  ProviderFactAlreadyResolvedError,
  ProviderFactNotCreditableError,
  ProviderFactNotFoundError,
} from "../../steps/provider-facts.ts";
import { CATALOGUE, withErrorCatalogue } from "./catalogue.ts";
import {
  AlreadyTerminalError,
  BadSignatureError,
  ConcurrentChangeError,
  DependencyUnavailableError,
  type DomainError,
  DomainErrorCode,
  FlexibleLinkNotFoundError,
  FlexibleRouteNotPoolError,
  IdempotencyConflictError,
  LegsDisagreeError,
  LifecycleViolationError,
  NoProviderAcceptedError,
  NotAwaitingConfirmationError,
  NotCancellableError,
  NotInManualCheckError,
  NotRoutedError,
  OperationNotFoundError,
  PricingRefusedError,
  ProviderNotFoundError,
  ReceiptEvidenceUnavailableError,
  RouteNotConfiguredError,
  StillRoutingError,
  ValidationError,
} from "./errors.ts";

const logger = createLogger("operations-test", "silent");

/** Calls `method` of a wrapped service whose every method throws `err`. */
function call(err: unknown, method: string): Promise<unknown> {
  const impl = Object.fromEntries(
    OperationsService.methods.map((m) => [
      m.localName,
      async () => {
        throw err;
      },
    ]),
  );
  const wrapped = withErrorCatalogue(OperationsService, impl as unknown as OperationsHandlers, logger);
  const fn = (wrapped as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[method];
  if (!fn) throw new Error(`no method ${method}`);
  return fn({}, {});
}

async function failureOf(call: Promise<unknown>): Promise<ConnectError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  return err as ConnectError;
}

describe("the error catalogue", () => {
  it("has one entry for every domain error code", () => {
    expect(Object.keys(CATALOGUE).sort()).toEqual(Object.values(DomainErrorCode).sort());
  });

  it("answers a validation error as INVALID_ARGUMENT with the public code and the field", async () => {
    const err = await failureOf(call(new ValidationError("reason is too long", "reason"), "cancelOperation"));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(errorInfo(err)).toMatchObject({ code: "validation_failed", field: "reason" });
  });

  it("answers not_cancellable as FAILED_PRECONDITION", async () => {
    const err = await failureOf(
      call(new NotCancellableError("payouts cannot be cancelled"), "cancelOperation"),
    );
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(errorInfo(err)?.code).toBe("not_cancellable");
  });

  it("answers a lifecycle violation as INTERNAL without its details", async () => {
    const err = await failureOf(
      call(new LifecycleViolationError("op-1", "completed", "rejected"), "getOperation"),
    );
    expect(err.code).toBe(Code.Internal);
    expect(err.rawMessage).toBe("internal error");
    expect(errorInfo(err)?.code).toBe("internal");
  });

  it("passes a Connect error raised outside the domain through unchanged", async () => {
    const raised = failure(Code.Unavailable, "no_provider_accepted", "no provider accepted the operation");
    const err = await failureOf(call(raised, "createOperation"));
    expect(err).toBe(raised);
  });

  it("answers every domain error class with its Connect code, public code and message", async () => {
    // Keyed by code: a class added without its row here does not typecheck. The Connect
    // code is what the edge turns into the HTTP status of the spec's Errors table.
    const answers: Record<DomainErrorCode, [DomainError, Code, PublicErrorCode]> = {
      lifecycle_violation: [
        new LifecycleViolationError("op", "completed", "pending"),
        Code.Internal,
        "internal",
      ],
      not_routed: [new NotRoutedError("not routed here"), Code.Internal, "internal"],
      already_terminal: [new AlreadyTerminalError("terminal"), Code.Internal, "internal"],
      legs_disagree: [new LegsDisagreeError("op", "1.00", "2.00"), Code.Internal, "internal"],
      operation_not_found: [new OperationNotFoundError(), Code.NotFound, "operation_not_found"],
      validation_failed: [new ValidationError("bad", "amount"), Code.InvalidArgument, "validation_failed"],
      not_cancellable: [new NotCancellableError("no"), Code.FailedPrecondition, "not_cancellable"],
      not_awaiting_confirmation: [
        new NotAwaitingConfirmationError("no"),
        Code.FailedPrecondition,
        "not_awaiting_confirmation",
      ],
      not_in_manual_check: [new NotInManualCheckError("no"), Code.FailedPrecondition, "not_in_manual_check"],
      operation_changed: [new ConcurrentChangeError(), Code.Aborted, "dependency_unavailable"],
      dependency_unavailable: [
        new DependencyUnavailableError("retry"),
        Code.Unavailable,
        "dependency_unavailable",
      ],
      provider_not_found: [new ProviderNotFoundError(), Code.NotFound, "provider_not_found"],
      bad_signature: [new BadSignatureError(), Code.Unauthenticated, "bad_signature"],
      receipt_evidence_unavailable: [
        new ReceiptEvidenceUnavailableError(),
        Code.Unavailable,
        "receipt_evidence_unavailable",
      ],
      still_routing: [new StillRoutingError(), Code.Unavailable, "dependency_unavailable"],
      idempotency_conflict: [
        new IdempotencyConflictError("used", "merchant_operation_id"),
        Code.FailedPrecondition,
        "idempotency_conflict",
      ],
      route_not_configured: [
        new RouteNotConfiguredError("payin", "WT_RUB_C2C"),
        Code.FailedPrecondition,
        "route_not_configured",
      ],
      no_provider_accepted: [new NoProviderAcceptedError(), Code.Unavailable, "no_provider_accepted"],
      flexible_route_not_pool: [
        new FlexibleRouteNotPoolError(),
        Code.FailedPrecondition,
        "flexible_route_not_pool",
      ],
      flexible_link_not_found: [new FlexibleLinkNotFoundError(), Code.NotFound, "flexible_link_not_found"],
      pricing_not_configured: [
        new PricingRefusedError("pricing_not_configured", "no pricing tier covers this amount", "amount"),
        Code.FailedPrecondition,
        "pricing_not_configured",
      ],
      fx_rate_missing: [
        new PricingRefusedError("fx_rate_missing", "no rate from RUB to USDT", "settlement_currency"),
        Code.FailedPrecondition,
        "fx_rate_missing",
      ],
      provider_fact_not_found: [
        new ProviderFactNotFoundError("gone"),
        Code.NotFound,
        "provider_fact_not_found",
      ],
      provider_fact_already_resolved: [
        new ProviderFactAlreadyResolvedError("twice"),
        Code.FailedPrecondition,
        "provider_fact_already_resolved",
      ],
      provider_fact_not_creditable: [
        new ProviderFactNotCreditableError("no shop"),
        Code.FailedPrecondition,
        "provider_fact_not_creditable",
      ],
    };
    for (const [code, [domain, connect, publicCode]] of Object.entries(answers)) {
      expect(domain.code, domain.name).toBe(code);
      const err = await failureOf(call(domain, "createOperation"));
      expect({ class: domain.name, connect: Code[err.code], public: errorInfo(err)?.code }).toEqual({
        class: domain.name,
        connect: Code[connect],
        public: publicCode,
      });
      if (publicCode !== "internal") {
        expect(err.rawMessage).toBe(domain.message);
        expect(errorInfo(err)?.field ?? "").toBe(domain.field ?? "");
      }
    }
  });
});

describe("the service's errors", () => {
  it("are raised as domain errors: `failure(` appears in no source file but the catalogue", () => {
    const src = fileURLToPath(new URL("../..", import.meta.url));
    const files = (readdirSync(src, { recursive: true }) as string[])
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts") && !f.startsWith("gen"))
      .map((f) => relative(src, join(src, f)));
    expect(files).toContain(join("steps", "create.ts"));
    const offenders = files.filter(
      (f) =>
        f !== join("domain", "lifecycle", "catalogue.ts") &&
        /\bfailure\(/.test(readFileSync(join(src, f), "utf8")),
    );
    expect(offenders).toEqual([]);
  });
});
