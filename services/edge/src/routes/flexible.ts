import { create } from "@bufbuild/protobuf";
import { flexibleBoundsProblem, operationJson } from "@gw/api";
import { ScopeSchema } from "@gw/proto/gateway/common/v1/common_pb";
import { z } from "@hono/zod-openapi";
import { Hono } from "hono";
import { CREATE_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import type { EdgeEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { requirePermission } from "../middleware/api-key.ts";
import type { EdgeStore } from "../store.ts";
import {
  amountText,
  clientIpText,
  currencies,
  currencyText,
  methodOfCurrency,
  methods,
  methodText,
  optionalField,
  parseBody,
  requiredField,
} from "../validation.ts";

/**
 * `POST /v1/payment/link/flexible`: rules 1 to 3 here (400), the rest in operations
 * (`CreateFlexibleLink`): 412 for a route that is not only the pool, an ordinary payment
 * without the shop's opt-in, and otherwise one of the spec's three answers. The link's
 * `payment_url` is `{PAY_URL}/<operation_id>?k=<k>`; `k` is a credential and is never
 * logged (the request log does not log bodies).
 */

/** The body: `POST /v1/payment` with `amount` replaced by `recommended_amount`, plus the two bounds. */
export const flexibleLinkBody = z
  .object({
    merchant_operation_id: requiredField("merchant_operation_id", "Idempotency key chosen by the merchant."),
    client_id: requiredField("client_id", "End-user identifier."),
    client_ip: clientIpText(),
    method: methodText().openapi({ enum: methods }),
    currency: currencyText().openapi({ enum: currencies }),
    recommended_amount: amountText("recommended_amount").openapi({ example: "1000.00" }),
    min_amount: amountText("min_amount").nullish().openapi({ example: "500.00" }),
    max_amount: amountText("max_amount").nullish().openapi({ example: "1500.00" }),
    number: optionalField("number", "Destination card or phone number; not used for payments."),
    name: optionalField("name", "Holder or payer name."),
    bankname: optionalField("bankname", "Bank code."),
  })
  .superRefine((body, ctx) => {
    methodOfCurrency(body, ctx);
    const problem = flexibleBoundsProblem(body);
    if (problem) ctx.addIssue({ code: "custom", path: [problem.field], message: problem.message });
  })
  .openapi("FlexibleLinkRequest");

export function flexibleLinkRoutes(clients: EdgeClients, store: EdgeStore, payUrl: string) {
  return new Hono<EdgeEnv>().post(
    "/payment/link/flexible",
    requirePermission("flexible_links"),
    async (c) => {
      const body = parseBody(flexibleLinkBody, c.get("body"));
      const scope = c.get("scope");
      const settings = await store.settings(scope.shopId);
      const res = await clients.operations.createFlexibleLink(
        {
          scope: create(ScopeSchema, { merchantId: scope.merchantId, shopId: scope.shopId }),
          merchantOperationId: body.merchant_operation_id,
          clientId: body.client_id,
          clientIp: body.client_ip ?? undefined,
          method: body.method,
          currency: body.currency,
          recommendedAmount: body.recommended_amount,
          minAmount: body.min_amount ?? undefined,
          maxAmount: body.max_amount ?? undefined,
          optIn: settings.flexibleLinkEnabled,
          picker: settings.flexiblePicker,
        },
        { timeoutMs: CREATE_TIMEOUT_MS },
      );
      const link = res.link;
      if (!link)
        throw new ApiError(503, "dependency_unavailable", "a dependency is unavailable, retry later");
      const url = res.k ? `${payUrl}/${link.operationId}?k=${encodeURIComponent(res.k)}` : null;
      if (res.operation && link.status !== "amount_selection" && link.status !== "expired") {
        // A payment exists: created (with its page), or an ordinary payment without the opt-in.
        const paymentUrl = link.status === "created" ? url : null;
        return c.json({ ...operationJson(res.operation), payment_url: paymentUrl });
      }
      const answer = (status: string) => ({
        operation_id: link.operationId,
        status,
        method: link.method,
        currency: link.currency,
        recommended_amount: link.recommendedAmount,
      });
      if (link.status === "rejected") return c.json({ ...answer("rejected"), payment_url: null });
      // amount_selection; a retry after the link expired answers the original link unchanged.
      return c.json({ ...answer("amount_selection"), payment_url: url, expires_at: link.expiresAt });
    },
  );
}
