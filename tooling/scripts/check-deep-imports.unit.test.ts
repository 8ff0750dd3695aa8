import { describe, expect, it } from "vitest";
import { deepImports } from "./check-deep-imports.ts";

describe("check-deep-imports", () => {
  it("finds another package's src/ by name, in imports, re-exports and dynamic imports, with their lines", () => {
    const text = [
      'import { startLedger } from "@gw/ledger/src/app.ts";',
      'export { OperationStore } from "@gw/operations/src/repository/operations.ts";',
      'const { a } = await import("@gw/edge/src/testing.ts");',
      'import "@gw/receipts/src/side-effect.ts";',
    ].join("\n");
    expect(deepImports("services/checkout/src/pages.test.ts", text)).toEqual([
      'services/checkout/src/pages.test.ts:1: imports "@gw/ledger/src/app.ts"',
      'services/checkout/src/pages.test.ts:2: imports "@gw/operations/src/repository/operations.ts"',
      'services/checkout/src/pages.test.ts:3: imports "@gw/edge/src/testing.ts"',
      'services/checkout/src/pages.test.ts:4: imports "@gw/receipts/src/side-effect.ts"',
    ]);
  });

  it("finds a relative path into another package", () => {
    const text = 'import { x } from "../../operations/test/harness.ts";';
    expect(deepImports("services/checkout/src/pages.test.ts", text)).toEqual([
      'services/checkout/src/pages.test.ts:1: imports "../../operations/test/harness.ts" (services/operations/)',
    ]);
    expect(
      deepImports("tests/e2e/x.test.ts", 'import { y } from "../../libs/db/src/index.ts";'),
    ).toHaveLength(1);
  });

  it("passes a package's entry, its exports subpaths, and relative paths inside the package", () => {
    const text = [
      'import { startLedger } from "@gw/ledger";',
      'import { startHarness } from "@gw/operations/testing";',
      'import { receiptPdf } from "@gw/testkit/receipts";',
      'import { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";',
      'import { startHarness as h } from "../test/harness.ts";',
      'import { pageOutcome } from "./page.ts";',
    ].join("\n");
    expect(deepImports("services/operations/src/page.test.ts", text)).toEqual([]);
    expect(deepImports("tests/e2e/sdk.test.ts", 'import { m } from "../src/merchant.ts";')).toEqual([]);
    // Only imports count: a string or a comment naming a path is not one.
    const mention = [
      '// see "@gw/operations/src/app.ts"',
      "const example = 'import { x } from \"@gw/ledger/src/app.ts\";';",
    ].join("\n");
    expect(deepImports("tooling/scripts/x.test.ts", mention)).toEqual([]);
  });
});
