import type { Sql } from "@gw/db";
import type { ProviderConfig } from "../domain/providers.ts";
import { builtInProvider } from "../domain/providers.ts";
import type { Route, RouteSummary, RouteWithProviders } from "./store.ts";

/** A route's columns as `routeWithProviders` and `createContext` select them. */
export interface RouteColumns {
  route_payin: string[];
  route_payout: string[];
  route_settlement_currency: string;
  route_providers: ProviderConfig[] | null;
  route_config_version: string | null;
}

/**
 * The configs of the providers route `r` names for `direction`, as `route_providers`, and
 * the configuration's version in the same snapshot, as `route_config_version`.
 */
export const providersOf = (sql: Sql, direction: "payin" | "payout") => sql`
  (select json_agg(json_build_object('name', p.name, 'kind', p.kind, 'baseUrl', p.base_url,
           'credentials', p.credentials, 'methods', p.methods))
     from operations.providers p
    where p.name = any(case when ${direction} = 'payin' then r.payin else r.payout end)) as route_providers,
  (select v.version::text from operations.config_version v) as route_config_version`;

/** A route with its providers in route order (a name with no registered provider: the built-in one, if any). */
export function routeOf(row: RouteColumns, direction: "payin" | "payout"): RouteWithProviders {
  const names = direction === "payin" ? row.route_payin : row.route_payout;
  const byName = new Map((row.route_providers ?? []).map((p) => [p.name, p]));
  return {
    route: {
      payin: row.route_payin,
      payout: row.route_payout,
      settlementCurrency: row.route_settlement_currency,
    },
    providers: names.map((n) => byName.get(n) ?? builtInProvider(n)),
    names,
    configVersion: row.route_config_version,
  };
}

export async function routeWithProviders(
  sql: Sql,
  shopId: string,
  method: string,
  direction: "payin" | "payout",
): Promise<RouteWithProviders | undefined> {
  const [row] = await sql<RouteColumns[]>`
    select r.payin as route_payin, r.payout as route_payout,
      r.settlement_currency as route_settlement_currency, ${providersOf(sql, direction)}
    from operations.routes r where r.shop_id = ${shopId} and r.method = ${method}`;
  return row ? routeOf(row, direction) : undefined;
}

export async function provider(sql: Sql, name: string): Promise<ProviderConfig | undefined> {
  const builtIn = builtInProvider(name);
  if (builtIn) return builtIn;
  const [row] = await sql<ProviderConfig[]>`
    select name, kind, base_url as "baseUrl", credentials, methods from operations.providers where name = ${name}`;
  return row;
}

export async function putProvider(sql: Sql, p: ProviderConfig): Promise<void> {
  await sql`
    insert into operations.providers (name, kind, base_url, credentials, methods)
    values (${p.name}, ${p.kind}, ${p.baseUrl}, ${p.credentials}, ${p.methods})
    on conflict (name) do update set kind = excluded.kind, base_url = excluded.base_url,
      credentials = excluded.credentials, methods = excluded.methods, updated_at = now()`;
}

export async function putRoute(sql: Sql, shopId: string, method: string, route: Route): Promise<void> {
  await sql`
    insert into operations.routes (shop_id, method, payin, payout, settlement_currency)
    values (${shopId}, ${method}, ${route.payin}, ${route.payout}, ${route.settlementCurrency})
    on conflict (shop_id, method) do update set payin = excluded.payin, payout = excluded.payout,
      settlement_currency = excluded.settlement_currency, updated_at = now()`;
}

/** Every registered provider, by name, without its credentials (the column is not even selected). */
export function listProviders(sql: Sql) {
  return sql<{ name: string; kind: string; base_url: string; methods: string[]; updated_at: string }[]>`
    select name, kind, base_url, methods,
           to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at
      from operations.providers order by name limit 1000`;
}

export function listRoutes(sql: Sql, shopId: string) {
  return sql<RouteSummary[]>`
    select method, payin, payout, settlement_currency,
           to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at
      from operations.routes
     where shop_id = ${shopId} order by method`;
}
