import type { ShopPage, ShopPages } from "../shop-pages.ts";
import type { MemoryAccess } from "./withdrawals.ts";

/** `operations.shop_pages` in memory, as `ShopPageRepository`: an upsert of the fields given. */
export class MemoryShopPages implements ShopPages {
  readonly #m: MemoryAccess;

  constructor(access: MemoryAccess) {
    this.#m = access;
  }

  async get(shopId: string): Promise<ShopPage | undefined> {
    const p = this.#m.read().shopPages.get(shopId);
    return p && { display_name: p.display_name, return_url: p.return_url };
  }

  put(
    shopId: string,
    patch: { display_name?: string | null; return_url?: string | null },
  ): Promise<ShopPage> {
    return this.#m.write(undefined, (s) => {
      const found = s.shopPages.get(shopId);
      const page = {
        display_name: patch.display_name !== undefined ? patch.display_name : (found?.display_name ?? null),
        return_url: patch.return_url !== undefined ? patch.return_url : (found?.return_url ?? null),
      };
      s.shopPages.set(shopId, { ...page, updated_at: this.#m.clock() });
      return page;
    });
  }
}
