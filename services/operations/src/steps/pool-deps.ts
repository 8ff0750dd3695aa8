import type { Client } from "@connectrpc/connect";
import type { Logger } from "@gw/log";
import type { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import type { Connector } from "../connectors/connector.ts";
import type { OperationRow } from "../domain/model.ts";
import { SELF_MATCHING } from "../domain/providers.ts";
import type { OperationStore } from "../repository/operations.ts";

/** Matching calls are single-statement; this bounds a slow one. */
export const MATCHING_TIMEOUT_MS = 5_000;

export interface PoolDeps {
  store: OperationStore;
  matching: Client<typeof MatchingService>;
  connectorFor: (kind: string) => Connector | undefined;
  callbackBaseUrl: string;
  attemptTimeoutMs: number;
  slotLifetimeMs: number;
  windowMs: number;
  logger: Logger;
}

export const isPooled = (row: Pick<OperationRow, "provider">) => row.provider === SELF_MATCHING;

/** What the pool needs to know of an operation it is asked to take. */
export type PoolEntry = Pick<
  OperationRow,
  | "id"
  | "type"
  | "shop_id"
  | "method"
  | "currency"
  | "expected_amount"
  | "number"
  | "name"
  | "bankname"
  | "created_at"
  | "version"
>;
