import type { ShopPage } from "@gw/proto/gateway/operations/v1/operations_pb";
import { ValidationError } from "../domain/lifecycle/errors.ts";
import type { OperationStore } from "../repository/operations.ts";

/**
 * How the payer's page presents a shop: its display name for payers and the link back to
 * the shop (`operations.shop_pages`). A spec extension (the spec is silent on both): the
 * page shows them only when set.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const DISPLAY_NAME_MAX = 100;
export const RETURN_URL_MAX = 2048;
/** C0 controls and DEL: never part of a name a payer reads. */
const CONTROL = {
  test: (v: string) => [...v].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f),
};

export interface ShopPageRow {
  display_name: string | null;
  return_url: string | null;
}

function checkShop(shopId: string) {
  if (!UUID.test(shopId)) throw new ValidationError("shop_id must be a UUID", "shop_id");
}

/** A display name as stored: trimmed, empty clears it. */
function displayName(value: string): string | null {
  const v = value.trim();
  if (v === "") return null;
  if (v.length > DISPLAY_NAME_MAX || CONTROL.test(v))
    throw new ValidationError(
      `display_name must be at most ${DISPLAY_NAME_MAX} characters without control characters`,
      "display_name",
    );
  return v;
}

/** A return URL as stored: an absolute http(s) URL; empty clears it. */
function returnUrl(value: string): string | null {
  const v = value.trim();
  if (v === "") return null;
  const ok =
    v.length <= RETURN_URL_MAX &&
    !CONTROL.test(v) &&
    URL.canParse(v) &&
    ["http:", "https:"].includes(new URL(v).protocol);
  if (!ok)
    throw new ValidationError(
      `return_url must be an http(s) URL of at most ${RETURN_URL_MAX} characters`,
      "return_url",
    );
  return v;
}

const toShopPage = (shopId: string, row: ShopPageRow | undefined): ShopPage => ({
  $typeName: "gateway.operations.v1.ShopPage",
  shopId,
  displayName: row?.display_name ?? undefined,
  returnUrl: row?.return_url ?? undefined,
});

export async function getShopPage(store: OperationStore, shopId: string): Promise<ShopPage> {
  checkShop(shopId);
  return toShopPage(shopId, await store.shopPages.get(shopId));
}

/** Sets the fields given (an empty string clears one) and answers the stored page. */
export async function putShopPage(
  store: OperationStore,
  req: { shopId: string; displayName?: string; returnUrl?: string },
): Promise<ShopPage> {
  checkShop(req.shopId);
  const patch: Partial<ShopPageRow> = {};
  if (req.displayName !== undefined) patch.display_name = displayName(req.displayName);
  if (req.returnUrl !== undefined) patch.return_url = returnUrl(req.returnUrl);
  return toShopPage(req.shopId, await store.shopPages.put(req.shopId, patch));
}
