import type { Database } from "@gw/db";
import { createRoute, z } from "@hono/zod-openapi";
import { getShop, listMerchants } from "../directory.ts";
import { notFound } from "../errors.ts";
import { errorResponses, jsonResponse, openApiApp } from "../schemas.ts";

/**
 * Admin: the directory of merchants and shops an operator browses: newest first,
 * searchable, keyset paginated (pass `next_cursor` as `cursor` until it is null).
 */

const security = [{ AdminBearer: [] }];
const tags = ["admin: accounts"];

const ShopItem = z
  .object({
    shop_id: z.string().openapi({ format: "uuid" }),
    merchant_id: z.string().openapi({ format: "uuid" }),
    name: z.string(),
    created_at: z.string().openapi({ format: "date-time" }),
  })
  .openapi("DirectoryShop");

const MerchantItem = z
  .object({
    merchant_id: z.string().openapi({ format: "uuid" }),
    name: z.string(),
    created_at: z.string().openapi({ format: "date-time" }),
    shops: z.array(ShopItem).openapi({ description: "All the merchant's shops, newest first." }),
  })
  .openapi("DirectoryMerchant");

const limitError = "limit must be an integer from 1 to 200";

const routes = {
  list: createRoute({
    method: "get",
    path: "/merchants",
    tags,
    security,
    summary: "Merchants with their shops, newest first, searchable and paginated",
    request: {
      query: z.object({
        q: z.string().max(200, { error: "q must be at most 200 characters" }).optional().openapi({
          description:
            "Matches a merchant or shop name containing it (any case), or a merchant or shop id equal to it.",
        }),
        cursor: z.uuid({ error: "cursor must be the next_cursor of the page before" }).optional(),
        limit: z.coerce
          .number({ error: limitError })
          .int({ error: limitError })
          .min(1, { error: limitError })
          .max(200, { error: limitError })
          .default(50),
      }),
    },
    responses: {
      200: jsonResponse(
        z.object({ merchants: z.array(MerchantItem), next_cursor: z.string().nullable() }),
        "One page, newest first.",
      ),
      ...errorResponses(400, 401),
    },
  }),
  shop: createRoute({
    method: "get",
    path: "/shops/{shop_id}",
    tags,
    security,
    summary: "One shop with its merchant",
    request: {
      params: z.object({
        shop_id: z.string().openapi({ param: { name: "shop_id", in: "path" }, format: "uuid" }),
      }),
    },
    responses: {
      200: jsonResponse(ShopItem.extend({ merchant_name: z.string() }), "The shop."),
      ...errorResponses(401, 404),
    },
  }),
};

const shopJson = (s: { id: string; merchantId: string; name: string; createdAt: Date }) => ({
  shop_id: s.id,
  merchant_id: s.merchantId,
  name: s.name,
  created_at: s.createdAt.toISOString(),
});

export function adminDirectoryRoutes(db: Database) {
  return openApiApp()
    .openapi(routes.list, async (c) => {
      const q = c.req.valid("query");
      const page = await listMerchants(db, { q: q.q, before: q.cursor, limit: q.limit });
      return c.json(
        {
          merchants: page.merchants.map((m) => ({
            merchant_id: m.id,
            name: m.name,
            created_at: m.createdAt.toISOString(),
            shops: m.shops.map(shopJson),
          })),
          next_cursor: page.nextCursor,
        },
        200,
      );
    })
    .openapi(routes.shop, async (c) => {
      const shop = await getShop(db, c.req.valid("param").shop_id);
      if (!shop) throw notFound("shop not found");
      return c.json({ ...shopJson(shop), merchant_name: shop.merchantName }, 200);
    });
}
