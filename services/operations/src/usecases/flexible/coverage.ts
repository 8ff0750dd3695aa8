import { rangeProblem } from "@gw/api";
import type { GetPoolCoverageRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { RouteNotConfiguredError } from "../../domain/lifecycle/errors.ts";
import type { CreateDeps } from "../../steps/create.ts";
import { pricingOf } from "../../steps/quote.ts";
import { amountOf, coverageOf, invalid, READ_TIMEOUT_MS } from "./link.ts";

/**
 * The availability endpoints' precondition and coverage: the shop must have a payin
 * route for the method (`route_not_configured`) and payin pricing at both ends of the
 * range (`pricing_not_configured`, from the ledger's quote).
 */
export async function getPoolCoverage(d: CreateDeps, req: GetPoolCoverageRequest) {
  const shopId = req.scope?.shopId ?? "";
  if (!shopId) throw invalid("scope", "scope is required");
  const problem = rangeProblem({
    method: req.method,
    currency: req.currency,
    min_amount: req.minAmount,
    max_amount: req.maxAmount,
  });
  if (problem) throw invalid(problem.field, problem.message);
  const lo = amountOf(req.minAmount, "min_amount");
  const hi = amountOf(req.maxAmount, "max_amount");
  const routing = await d.store.routeWithProviders(shopId, req.method, "payin");
  if (!routing || routing.names.length === 0) throw new RouteNotConfiguredError("payin", req.method);
  await Promise.all(
    [lo, hi].map((amount) =>
      pricingOf(d).quote(
        {
          shopId,
          method: req.method,
          direction: "payin",
          amount: amount.toFixed(2),
          currency: req.currency,
          settlementCurrency: routing.route.settlementCurrency,
        },
        { timeoutMs: READ_TIMEOUT_MS },
      ),
    ),
  );
  return { coverage: coverageOf(routing.names) };
}
