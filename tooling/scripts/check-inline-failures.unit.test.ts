import { describe, expect, it } from "vitest";
import { exempt, violations } from "./check-inline-failures.ts";

describe("check-inline-failures", () => {
  it("finds an inline failure, a qualified one and the import of failure outside a catalogue", () => {
    const text = [
      'import { Code, failure as fail } from "@gw/rpc";',
      'import * as rpc from "@gw/rpc";',
      "export function f(id: string) {",
      '  if (!id) throw failure(Code.NotFound, "not_found", "delivery not found");',
      '  throw rpc.failure(Code.InvalidArgument, "validation_failed", "bad", "id");',
      "}",
    ].join("\n");
    expect(violations("services/webhooks/src/service.ts", text)).toEqual([
      'services/webhooks/src/service.ts:1: imports `failure` from "@gw/rpc"',
      "services/webhooks/src/service.ts:4: inline `failure(...)`",
      "services/webhooks/src/service.ts:5: inline `rpc.failure(...)`",
    ]);
  });

  it("passes code that raises a catalogue's named errors", () => {
    const text = [
      'import { deliveryNotFound, invalid } from "./errors.ts";',
      "export function f(id: string) {",
      '  if (!id) throw invalid("id", "id is required");',
      "  throw deliveryNotFound();",
      "}",
    ].join("\n");
    expect(violations("services/webhooks/src/service.ts", text)).toEqual([]);
  });

  it("leaves the catalogues and tests alone, and nothing else", () => {
    expect(exempt("services/webhooks/src/errors.ts")).toBe(true);
    expect(exempt("services/operations/src/lifecycle/catalogue.ts")).toBe(true);
    expect(exempt("libs/rpc/src/errors.ts")).toBe(true);
    expect(exempt("services/webhooks/src/webhooks.test.ts")).toBe(true);
    expect(exempt("services/webhooks/src/service.ts")).toBe(false);
    expect(exempt("services/receipts/src/review-file.ts")).toBe(false);
    expect(exempt("libs/events/src/dead-letter-service.ts")).toBe(false);
  });
});
