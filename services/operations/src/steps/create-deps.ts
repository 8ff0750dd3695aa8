import type { Client } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import type { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import type { Connector } from "../connectors/connector.ts";
import type { OperationRow } from "../domain/model.ts";
import type { CreateStore } from "../repository/operations.ts";
import type { PoolDeps } from "./pool-deps.ts";
import type { Pricing } from "./pricing.ts";
import type { RouteCache } from "./route-cache.ts";
import type { WithdrawalDriver } from "./withdrawals.ts";

/** What a create (and whoever drives its routing: a retry, the reconciler) works with. */
export interface CreateDeps {
  store: CreateStore;
  ledger: Client<typeof LedgerService>;
  connectorFor: (kind: string) => Connector | undefined;
  callbackBaseUrl: string;
  budgetMs: number;
  attemptTimeoutMs: number;
  logger: Logger;
  /**
   * The self-matching pool, for the reconciler and flexible links (routing reaches it as
   * a provider, through `connectorFor`).
   */
  pool?: PoolDeps;
  /**
   * Asks a passed-over payin's withdrawal at once (absent: the withdrawal driver of any
   * process asks it once its lease has run out).
   */
  withdrawals?: Pick<WithdrawalDriver, "askNow">;
  /** Quotes from cached pricing terms (`Pricing.cached`); absent: every quote is the ledger's Quote. */
  pricing?: Pricing;
  /** Creates' routes, cached (`RouteCache`); absent: every create reads its route. */
  routes?: RouteCache;
}

/** A create's answer: its row, and whether it replays an earlier create of the same key. */
export type CreateResult = { row: OperationRow; replayed: boolean };
