import type { Sql } from "@gw/db";
import type { ListRoutesRequest } from "@gw/proto/gateway/operations/v1/operations_pb";
import { Code, failure } from "@gw/rpc";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The admin reads of the configuration operations owns: providers (never their
 * credentials: the column is not even selected) and a shop's routes.
 */

export async function listProviders(sql: Sql) {
  const rows = await sql<
    { name: string; kind: string; base_url: string; methods: string[]; updated_at: string }[]
  >`
    select name, kind, base_url, methods,
           to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at
      from operations.providers order by name limit 1000`;
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

export async function listRoutes(sql: Sql, req: ListRoutesRequest) {
  if (!UUID.test(req.shopId))
    throw failure(Code.InvalidArgument, "validation_failed", "shop_id must be a UUID", "shop_id");
  const rows = await sql<
    { method: string; payin: string[]; payout: string[]; settlement_currency: string; updated_at: string }[]
  >`
    select method, payin, payout, settlement_currency,
           to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at
      from operations.routes
     where shop_id = ${req.shopId} order by method`;
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
