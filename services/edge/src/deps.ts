import type { Client } from "@connectrpc/connect";
import type { Database } from "@gw/db";
import type { Logger } from "@gw/log";
import type { DeadLetterService } from "@gw/proto/gateway/deadletters/v1/dead_letters_pb";
import type { EventHealthService } from "@gw/proto/gateway/events/v1/event_health_pb";
import type { LedgerService } from "@gw/proto/gateway/ledger/v1/ledger_pb";
import type { MatchingService } from "@gw/proto/gateway/matching/v1/matching_pb";
import type { OperationsService } from "@gw/proto/gateway/operations/v1/operations_pb";
import type { ProviderFactsService } from "@gw/proto/gateway/operations/v1/provider_facts_pb";
import type { ReceiptsService } from "@gw/proto/gateway/receipts/v1/receipts_pb";
import type { WebhooksService } from "@gw/proto/gateway/webhooks/v1/webhooks_pb";
import type { AdmissionLimits } from "./admission.ts";
import type { KeyCache } from "./key-cache.ts";

/** The services with event consumers, each serving the dead letters of its own schema. */
export const DEAD_LETTER_HOLDERS = ["operations", "ledger", "webhooks"] as const;
export type DeadLetterHolder = (typeof DEAD_LETTER_HOLDERS)[number];

/** The services with an outbox or consumers, each serving the event health of its own. */
export const EVENT_HEALTH_HOLDERS = ["operations", "ledger", "matching", "webhooks"] as const;
export type EventHealthHolder = (typeof EVENT_HEALTH_HOLDERS)[number];

/** The downstream gRPC services the edge maps requests to. */
export interface EdgeClients {
  operations: Client<typeof OperationsService>;
  ledger: Client<typeof LedgerService>;
  webhooks: Client<typeof WebhooksService>;
  /** The self-matching pool: availability and recommendation reads. */
  matching: Client<typeof MatchingService>;
  /** Receipt downloads through signed links. */
  receipts: Client<typeof ReceiptsService>;
  /** The dead letters of each service with consumers (`DEAD_LETTER_HOLDERS`). */
  deadLetters: Record<DeadLetterHolder, Client<typeof DeadLetterService>>;
  /** Each service's outbox and consumers (`EVENT_HEALTH_HOLDERS`); `/admin/v1/audit/events` answers 503 without them. */
  eventHealth?: Record<EventHealthHolder, Client<typeof EventHealthService>>;
  /** The operators' queue of provider facts (operations); the admin routes answer 503 without it. */
  providerFacts?: Client<typeof ProviderFactsService>;
}

/** Answers whether one dependency is reachable now; false or a throw both mean no. */
export type Probe = () => Promise<boolean>;

/** What `buildApp` needs; `startEdge` builds the real ones, tests may pass their own clients. */
export interface EdgeDeps {
  db: Database;
  /** The replica's cache of live API keys; without it every request reads its key from Postgres. */
  keyCache?: KeyCache;
  logger: Logger;
  clients: EdgeClients;
  adminToken: string;
  /** Base of hosted page links, without a trailing slash. */
  payUrl: string;
  /** Admission control of the merchant API (`/v1`); `DEFAULT_ADMISSION` when not given. */
  admission?: AdmissionLimits;
  /** The largest receipt `POST /v1/confirm_payment` takes (the receipts storage limit); default 20 MiB. */
  receiptMaxBytes?: number;
  probes: {
    /** The edge's own dependencies (Postgres, NATS): `/healthz`. */
    self: Record<string, Probe>;
    /** The gRPC services behind it: `/readyz` adds these. */
    downstream: Record<string, Probe>;
  };
}

/** Deadline of a create call: the spec's 15 s provider wait, plus room for the hop and the write. */
export const CREATE_TIMEOUT_MS = 20_000;
/** Deadline of every other downstream call. */
export const CALL_TIMEOUT_MS = 5_000;
