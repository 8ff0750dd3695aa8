import { create } from "@bufbuild/protobuf";
import { rangeProblem } from "@gw/api";
import { GetPoolCoverageRequestSchema } from "@gw/proto/gateway/operations/v1/operations_pb";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../domain/lifecycle/errors.ts";
import { MemoryOperationStore } from "../../repository/memory/store.ts";
import type { CreateDeps } from "../../steps/create.ts";
import { getPoolCoverage } from "./coverage.ts";

// Operations refuses a bad availability range with the field and message of libs/api's
// rangeProblem, which the edge's schema answers with too, before it reads anything.

const deps = { store: new MemoryOperationStore() } as unknown as CreateDeps;
const good = { method: "WT_RUB_C2C", currency: "RUB", minAmount: "1.00", maxAmount: "2.00" };

describe("operations' availability range rules", () => {
  it.each<[string, Partial<typeof good>]>([
    ["an unknown method", { method: "WT_XXX" }],
    ["a method of another currency", { currency: "USDT" }],
    ["a zero min", { minAmount: "0.00" }],
    ["min above max", { minAmount: "3.00" }],
  ])("answer %s as rangeProblem does", async (_, change) => {
    const r = { ...good, ...change };
    const expected = rangeProblem({
      method: r.method,
      currency: r.currency,
      min_amount: r.minAmount,
      max_amount: r.maxAmount,
    });
    expect(expected).toBeDefined();
    const err = await getPoolCoverage(
      deps,
      create(GetPoolCoverageRequestSchema, { scope: { shopId: "s" }, ...r }),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect({ field: (err as ValidationError).field, message: (err as Error).message }).toEqual(expected);
  });
});
