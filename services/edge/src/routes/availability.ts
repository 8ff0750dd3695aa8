import { create } from "@bufbuild/protobuf";
import { boundsOrderProblem } from "@gw/api";
import { ScopeSchema } from "@gw/proto/gateway/common/v1/common_pb";
import type { AmountInterval, Recommendation } from "@gw/proto/gateway/matching/v1/matching_pb";
import { z } from "@hono/zod-openapi";
import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import type { EdgeClients } from "../deps.ts";
import type { EdgeEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { requirePermission } from "../middleware/api-key.ts";
import { TokenBuckets } from "../rate-limit.ts";
import {
  amountText,
  currencies,
  currencyText,
  methodOfCurrency,
  methods,
  methodText,
  parseBody,
  typeMessage,
} from "../validation.ts";

/**
 * `GET /v1/payment/availability` and `POST /v1/payment/recommendations`: advisory reads of
 * the self-matching pool. Order of work per request: the key (the `/v1` middleware), the
 * key's permission (403 for a restricted key without `availability`), the
 * per-shop rate limit shared by both endpoints, validation, then within one 2 s budget
 * the shop's coverage and preconditions (operations: route, pricing of both bounds) and
 * the pool read (matching: one read per replica, 2 s budget of its own). Every answer,
 * errors included, carries `Cache-Control: no-store`.
 */

/** The spec's downstream budget per read. */
export const READ_BUDGET_MS = 2_000;
/** The spec's request rate: per shop, per edge replica, shared by both endpoints. */
export const READS_PER_SECOND = 5;

const rangeFields = {
  method: methodText().openapi({ enum: methods, example: "WT_RUB_C2C" }),
  currency: currencyText().openapi({ enum: currencies, example: "RUB" }),
  min_amount: amountText("min_amount").openapi({ example: "500.00" }),
  max_amount: amountText("max_amount").openapi({ example: "5000.00" }),
};

type Range = { method: string; currency: string; min_amount: string; max_amount: string };

/** Rules 1 and 2 of both endpoints, after the field formats. */
function rangeRules(body: Range, ctx: z.RefinementCtx) {
  methodOfCurrency(body, ctx);
  const problem = boundsOrderProblem(body);
  if (problem) ctx.addIssue({ code: "custom", path: [problem.field], message: problem.message });
}

/** The query of `GET /v1/payment/availability`. */
export const availabilityQuery = z.object(rangeFields).superRefine(rangeRules).openapi("AvailabilityQuery");

/** The body of `POST /v1/payment/recommendations`. */
export const recommendationsBody = z
  .object({
    ...rangeFields,
    amount: amountText("amount").openapi({
      description: "Desired amount; may lie outside the bounds.",
      example: "1000.00",
    }),
    limit: z
      .number({ error: typeMessage("limit", "an integer from 1 to 10") })
      .int({ error: "limit must be an integer from 1 to 10" })
      .min(1, { error: "limit must be an integer from 1 to 10" })
      .max(10, { error: "limit must be an integer from 1 to 10" })
      .nullish()
      .openapi({ description: "Default 3, at most 10." }),
  })
  .superRefine(rangeRules)
  .openapi("RecommendationsRequest");

const intervalJson = (i: AmountInterval) => ({ min_amount: i.minAmount, max_amount: i.maxAmount });
const recommendationJson = (r: Recommendation) => ({ amount: r.amount, delta: r.delta });

/** `Cache-Control: no-store` on every answer of these routes, errors included. */
const noStore = createMiddleware<EdgeEnv>(async (c, next) => {
  await next();
  c.res.headers.set("Cache-Control", "no-store");
});

/** The per-shop limit shared by both endpoints: 429 with `Retry-After` over it. */
function rateLimit(buckets: TokenBuckets) {
  return createMiddleware<EdgeEnv>(async (c, next) => {
    const taken = buckets.take(c.get("scope").shopId);
    if (!taken.ok) {
      throw new ApiError(
        429,
        "rate_limited",
        `at most ${READS_PER_SECOND} availability requests per second; retry after ${taken.retryAfterSeconds} s`,
        undefined,
        { retryAfterSeconds: taken.retryAfterSeconds },
      );
    }
    await next();
  });
}

export function availabilityRoutes(
  clients: EdgeClients,
  options: { buckets?: TokenBuckets; budgetMs?: number } = {},
) {
  const buckets =
    options.buckets ?? new TokenBuckets({ capacity: READS_PER_SECOND, ratePerSecond: READS_PER_SECOND });
  const budgetMs = options.budgetMs ?? READ_BUDGET_MS;

  /** The shop's coverage (and its preconditions: 412), within the read's budget. */
  const coverage = async (scope: EdgeEnv["Variables"]["scope"], range: Range, deadline: number) => {
    const res = await clients.operations.getPoolCoverage(
      {
        scope: create(ScopeSchema, { merchantId: scope.merchantId, shopId: scope.shopId }),
        method: range.method,
        currency: range.currency,
        minAmount: range.min_amount,
        maxAmount: range.max_amount,
      },
      { timeoutMs: remaining(deadline) },
    );
    return res.coverage;
  };

  return new Hono<EdgeEnv>()
    .use("/payment/availability", noStore, requirePermission("availability"), rateLimit(buckets))
    .use("/payment/recommendations", noStore, requirePermission("availability"), rateLimit(buckets))
    .get("/payment/availability", async (c) => {
      const query = parseBody(availabilityQuery, c.req.query());
      const deadline = Date.now() + budgetMs;
      const cov = await coverage(c.get("scope"), query, deadline);
      const res = await clients.matching.availability(
        {
          method: query.method,
          currency: query.currency,
          minAmount: query.min_amount,
          maxAmount: query.max_amount,
          coverage: cov,
        },
        { timeoutMs: remaining(deadline) },
      );
      compatible(res, query, cov);
      return c.json({
        method: res.method,
        currency: res.currency,
        evaluated_at: res.evaluatedAt,
        coverage: res.coverage,
        reserved: false,
        truncated: res.truncated,
        intervals: res.intervals.map(intervalJson),
      });
    })
    .post("/payment/recommendations", async (c) => {
      const body = parseBody(recommendationsBody, c.get("body"));
      const deadline = Date.now() + budgetMs;
      const cov = await coverage(c.get("scope"), body, deadline);
      const res = await clients.matching.recommendations(
        {
          method: body.method,
          currency: body.currency,
          amount: body.amount,
          minAmount: body.min_amount,
          maxAmount: body.max_amount,
          limit: body.limit ?? 0,
          coverage: cov,
        },
        { timeoutMs: remaining(deadline) },
      );
      compatible(res, body, cov);
      return c.json({
        method: res.method,
        currency: res.currency,
        evaluated_at: res.evaluatedAt,
        coverage: res.coverage,
        reserved: false,
        truncated: res.truncated,
        intervals: res.intervals.map(intervalJson),
        recommendations: res.recommendations.map(recommendationJson),
      });
    });
}

/**
 * The spec's 503 for an incompatible rolling version. A replica of another version that
 * does not know the RPC answers Unimplemented (503, like any version skew, see
 * errors.ts); one that does not know a field of the read drops it (protobuf ignores
 * unknown fields) and echoes it empty. An answer that does not echo the read it was asked
 * (method, currency, coverage) or lacks `evaluated_at` is therefore refused with 503
 * rather than rendered wrong; a retry reaches a replica of the right version.
 */
function compatible(
  res: { method: string; currency: string; coverage: string; evaluatedAt: string },
  asked: Pick<Range, "method" | "currency">,
  coverage: string,
) {
  if (
    res.method !== asked.method ||
    res.currency !== asked.currency ||
    res.coverage !== coverage ||
    res.evaluatedAt === ""
  )
    throw new ApiError(
      503,
      "incompatible_version",
      "a service of another version answered the availability read, retry later",
    );
}

/** What is left of the budget; a spent budget is answered 503 without calling further. */
function remaining(deadline: number): number {
  const left = deadline - Date.now();
  if (left <= 0)
    throw new ApiError(503, "dependency_unavailable", "the availability read ran out of time, retry later");
  return left;
}
