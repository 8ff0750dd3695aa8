import type { Balance } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import { Hono } from "hono";
import { CALL_TIMEOUT_MS, type EdgeClients } from "../deps.ts";
import type { EdgeEnv } from "../env.ts";

/** A balance row of the spec, amounts as the ledger printed them. */
export const balanceJson = (b: Balance) => ({
  currency: b.currency,
  balance: b.balance,
  current_minus: b.currentMinus,
  reserved: b.reserved,
});

/** `GET /v1/balances`: the key's shop only, one row per supported currency. */
export function balanceRoutes(clients: EdgeClients) {
  return new Hono<EdgeEnv>().get("/balances", async (c) => {
    const res = await clients.ledger.getBalances(
      { shopId: c.get("scope").shopId },
      { timeoutMs: CALL_TIMEOUT_MS },
    );
    return c.json({ balances: res.balances.map(balanceJson) });
  });
}
