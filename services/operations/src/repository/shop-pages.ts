import type { Sql } from "@gw/db";

/** How the payer's page presents a shop. */
export interface ShopPage {
  display_name: string | null;
  return_url: string | null;
}

/** `operations.shop_pages` (`ShopPageRepository` on Postgres, `MemoryShopPages` in memory). */
export interface ShopPages {
  get(shopId: string): Promise<ShopPage | undefined>;
  /** Sets the given fields (null clears one), creating the row; answers the stored row. */
  put(shopId: string, patch: { display_name?: string | null; return_url?: string | null }): Promise<ShopPage>;
}

/** `operations.shop_pages`: how the payer's page presents each shop. */
export class ShopPageRepository implements ShopPages {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async get(shopId: string): Promise<{ display_name: string | null; return_url: string | null } | undefined> {
    const [row] = await this.#sql<{ display_name: string | null; return_url: string | null }[]>`
      select display_name, return_url from operations.shop_pages where shop_id = ${shopId}`;
    return row;
  }

  /** Sets the given fields (null clears one), creating the row; answers the stored row. */
  async put(
    shopId: string,
    patch: { display_name?: string | null; return_url?: string | null },
  ): Promise<{ display_name: string | null; return_url: string | null }> {
    const name = patch.display_name !== undefined;
    const url = patch.return_url !== undefined;
    const [row] = await this.#sql<{ display_name: string | null; return_url: string | null }[]>`
      insert into operations.shop_pages (shop_id, display_name, return_url)
      values (${shopId}, ${patch.display_name ?? null}, ${patch.return_url ?? null})
      on conflict (shop_id) do update set
        display_name = case when ${name} then excluded.display_name else shop_pages.display_name end,
        return_url = case when ${url} then excluded.return_url else shop_pages.return_url end,
        updated_at = now()
      returning display_name, return_url`;
    return row!;
  }
}
