import { Code, ConnectError } from "@connectrpc/connect";
import { createLogger } from "@gw/log";
import { OperationsService } from "@gw/proto/gateway/operations/v1/operations_pb";
import { errorInfo, failure } from "@gw/rpc";
import { describe, expect, it } from "vitest";
import type { OperationsHandlers } from "../handlers.ts";
import { CATALOGUE, withErrorCatalogue } from "./catalogue.ts";
import { DomainErrorCode, LifecycleViolationError, NotCancellableError, ValidationError } from "./errors.ts";

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
});
