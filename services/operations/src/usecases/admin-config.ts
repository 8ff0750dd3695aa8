import { isCurrency, isMethod } from "@gw/money";
import type { PutProviderRequest, PutRouteRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import type { Connector } from "../connectors/connector.ts";
import { ValidationError } from "../domain/lifecycle/errors.ts";
import { SELF_MATCHING } from "../domain/providers.ts";
import type { OperationStore } from "../repository/operations.ts";
import type { RouteCache } from "../steps/route-cache.ts";

/**
 * The admin writes of the configuration operations owns: providers and a shop's routes.
 * Each validates its request (throwing `ValidationError` with the field at fault), stores
 * it whole, replacing what was there, and, once committed, empties every replica's route
 * cache (`RouteCache`) before it answers, so the very next create routes by it.
 */

/** What the admin writes need: the store, and the route cache of this replica, if any. */
type AdminDeps = { store: OperationStore; routes?: RouteCache | undefined };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** Admin: registers or replaces a provider. `self_matching` names the pool and is refused, as name and as kind. */
export async function putProvider(
  d: AdminDeps & { connectorFor: (kind: string) => Connector | undefined },
  req: PutProviderRequest,
) {
  if (!PROVIDER_NAME.test(req.name) || req.name === "self_matching")
    throw new ValidationError("provider name must be [a-z0-9_-], not self_matching", "name");
  // The pool is built in under its own name: a provider of its kind under another would
  // reach the pool while events and checks that know the pool by name miss it.
  if (req.kind === SELF_MATCHING)
    throw new ValidationError(
      "kind self_matching is the built-in pool: route to self_matching instead",
      "kind",
    );
  if (!req.kind || !d.connectorFor(req.kind)) throw new ValidationError("unknown connector kind", "kind");
  if (!URL.canParse(req.baseUrl)) throw new ValidationError("base_url must be a URL", "base_url");
  if (!req.credentials) throw new ValidationError("credentials are required", "credentials");
  const bad = req.methods.find((m) => !isMethod(m));
  if (bad !== undefined || req.methods.length === 0)
    throw new ValidationError("methods must be known methods", "methods");
  await d.store.putProvider({
    name: req.name,
    kind: req.kind,
    baseUrl: req.baseUrl.replace(/\/+$/, ""),
    credentials: req.credentials,
    methods: req.methods,
  });
  await d.routes?.invalidateAll();
  return {};
}

/** Admin: sets a shop's provider lists and settlement currency for one method. */
export async function putRoute(d: AdminDeps, req: PutRouteRequest) {
  if (!UUID.test(req.shopId)) throw new ValidationError("shop_id must be a UUID", "shop_id");
  if (!isMethod(req.method)) throw new ValidationError("unknown method", "method");
  if (!isCurrency(req.settlementCurrency))
    throw new ValidationError("unknown settlement currency", "settlement_currency");
  for (const [field, list] of [
    ["payin", req.payin],
    ["payout", req.payout],
  ] as const) {
    if (new Set(list).size !== list.length || list.some((n) => !PROVIDER_NAME.test(n)))
      throw new ValidationError(`${field} must be distinct provider names`, field);
  }
  await d.store.putRoute(req.shopId, req.method, {
    payin: req.payin,
    payout: req.payout,
    settlementCurrency: req.settlementCurrency,
  });
  await d.routes?.invalidateAll();
  return {};
}
