import type { ListRoutesRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { ValidationError } from "../domain/lifecycle/errors.ts";
import type { OperationStore } from "../repository/operations.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The admin reads of the configuration operations owns: providers (never their
 * credentials) and a shop's routes.
 */

/** Admin: every registered provider. */
export async function listProviders(store: OperationStore) {
  const rows = await store.listProviders();
  return {
    providers: rows.map((r) => ({
      name: r.name,
      kind: r.kind,
      baseUrl: r.base_url,
      methods: r.methods,
      updatedAt: r.updated_at,
    })),
  };
}

/** Admin: a shop's routes. Throws `ValidationError` for a shop id that is not a UUID. */
export async function listRoutes(store: OperationStore, req: ListRoutesRequest) {
  if (!UUID.test(req.shopId)) throw new ValidationError("shop_id must be a UUID", "shop_id");
  const rows = await store.listRoutes(req.shopId);
  return {
    routes: rows.map((r) => ({
      method: r.method,
      payin: r.payin,
      payout: r.payout,
      settlementCurrency: r.settlement_currency,
      updatedAt: r.updated_at,
    })),
  };
}
