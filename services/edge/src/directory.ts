import type { Database } from "@gw/db";
import { and, desc, eq, exists, ilike, inArray, lt, or, type SQL } from "drizzle-orm";
import { merchants, shops } from "./db/schema.ts";
import { isUuid } from "./store.ts";

/**
 * The directory of merchants and shops as operators browse it (the back office): newest
 * first, searchable, keyset paginated on the id (UUIDv7, so id order is creation order).
 */

export interface DirectoryShop {
  id: string;
  merchantId: string;
  name: string;
  createdAt: Date;
}
export interface DirectoryMerchant {
  id: string;
  name: string;
  createdAt: Date;
  shops: DirectoryShop[];
}

/** `%` and `_` of an operator's search text match themselves. */
const likeText = (q: string) => `%${q.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;

/**
 * A page of merchants, newest first, each with all its shops (newest first): those whose
 * name contains `q` (any case), whose id is `q`, or with a shop so named or with that id.
 */
export async function listMerchants(
  db: Database,
  options: { q?: string; before?: string; limit: number },
): Promise<{ merchants: DirectoryMerchant[]; nextCursor: string | null }> {
  const where: SQL[] = [];
  if (options.before) where.push(lt(merchants.id, options.before));
  const q = options.q?.trim();
  if (q) {
    const shopMatch = db
      .select({ one: shops.id })
      .from(shops)
      .where(
        and(
          eq(shops.merchantId, merchants.id),
          isUuid(q) ? or(eq(shops.id, q), ilike(shops.name, likeText(q))) : ilike(shops.name, likeText(q)),
        ),
      );
    where.push(
      or(
        ilike(merchants.name, likeText(q)),
        ...(isUuid(q) ? [eq(merchants.id, q)] : []),
        exists(shopMatch),
      ) as SQL,
    );
  }
  const rows = await db
    .select()
    .from(merchants)
    .where(where.length ? and(...where) : undefined)
    .orderBy(desc(merchants.id))
    .limit(options.limit + 1);
  const page = rows.slice(0, options.limit);
  const own =
    page.length === 0
      ? []
      : await db
          .select()
          .from(shops)
          .where(
            inArray(
              shops.merchantId,
              page.map((m) => m.id),
            ),
          )
          .orderBy(desc(shops.id));
  return {
    merchants: page.map((m) => ({ ...m, shops: own.filter((s) => s.merchantId === m.id) })),
    nextCursor: rows.length > options.limit ? (page.at(-1)?.id ?? null) : null,
  };
}

/** One shop with its merchant's name; undefined when there is none. */
export async function getShop(
  db: Database,
  shopId: string,
): Promise<(DirectoryShop & { merchantName: string }) | undefined> {
  if (!isUuid(shopId)) return undefined;
  const [row] = await db
    .select({
      id: shops.id,
      merchantId: shops.merchantId,
      name: shops.name,
      createdAt: shops.createdAt,
      merchantName: merchants.name,
    })
    .from(shops)
    .innerJoin(merchants, eq(merchants.id, shops.merchantId))
    .where(eq(shops.id, shopId))
    .limit(1);
  return row;
}
