import type { ServiceImpl } from "@connectrpc/connect";
import type { Database } from "@gw/db";
import type { Logger } from "@gw/log";
import type { ListDeliveriesAuditRequest, WebhooksService } from "@gw/proto/gateway/webhooks/v1/webhooks_pb";
import { and, asc, desc, eq, gt, type SQL, sql } from "drizzle-orm";
import { deliveries, endpoints } from "./db/schema.ts";
import { WAKE_CHANNEL } from "./delivery-worker.ts";
import { deliveryNotFound, endpointNotFound, invalid } from "./errors.ts";
import { generateSecret } from "./signing.ts";
import { checkEndpointUrl, TargetRejected } from "./targets.ts";

export interface WebhooksHandlersOptions {
  db: Database;
  logger: Logger;
  allowPrivateTargets: boolean;
  /** Steps of the retry schedule: a manual redelivery of a finished delivery uses none. */
  retrySteps: number;
  /** How long the previous secret keeps signing after a rotation. */
  secretGraceMs: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DEFAULT_LIST_LIMIT = 50;
const MAX_LIST_LIMIT = 200;
/** The audit read's default and largest page. */
const AUDIT_PAGE = { default: 500, max: 1000 } as const;
const DELIVERY_STATUSES = ["pending", "delivered", "failed"];

function requireUuid(value: string, field: string): string {
  if (!UUID.test(value)) throw invalid(field, `${field} must be a UUID`);
  return value.toLowerCase();
}

const iso = (d: Date | null) => (d ? d.toISOString() : undefined);

/** The admin surface of webhooks: endpoints, secrets and the delivery log. */
export class WebhooksHandlers implements ServiceImpl<typeof WebhooksService> {
  readonly #o: WebhooksHandlersOptions;

  constructor(options: WebhooksHandlersOptions) {
    this.#o = options;
  }

  /**
   * Sets the shop's endpoint URL. Returns the signing secret only when the shop had no
   * endpoint before; changing the URL keeps the secret.
   * Errors: INVALID_ARGUMENT (validation_failed) for a bad shop id or URL.
   */
  async putEndpoint(req: { shopId: string; url: string }) {
    const shopId = requireUuid(req.shopId, "shop_id");
    let url: URL;
    try {
      url = await checkEndpointUrl(req.url, this.#o.allowPrivateTargets);
    } catch (err) {
      if (err instanceof TargetRejected) throw invalid("url", err.message);
      throw err;
    }
    const secret = generateSecret();
    const created = await this.#o.db
      .insert(endpoints)
      .values({ shopId, url: url.toString(), secret })
      .onConflictDoNothing()
      .returning({ shopId: endpoints.shopId });
    if (created.length > 0) {
      this.#o.logger.info({ shopId, host: url.host }, "webhook endpoint created");
      return { secret };
    }
    await this.#o.db
      .update(endpoints)
      .set({ url: url.toString(), updatedAt: sql`now()` })
      .where(eq(endpoints.shopId, shopId));
    this.#o.logger.info({ shopId, host: url.host }, "webhook endpoint updated");
    return {};
  }

  /**
   * Replaces the signing secret and returns the new one. The previous secret keeps
   * signing next to it for the grace period, so no event fails verification while the
   * merchant switches. Errors: NOT_FOUND when the shop has no endpoint.
   */
  async rotateSecret(req: { shopId: string }) {
    const shopId = requireUuid(req.shopId, "shop_id");
    const secret = generateSecret();
    const rows = await this.#o.db
      .update(endpoints)
      .set({
        previousSecret: sql`${endpoints.secret}`,
        previousSecretExpiresAt: sql`now() + make_interval(secs => ${this.#o.secretGraceMs / 1000})`,
        secret,
        updatedAt: sql`now()`,
      })
      .where(eq(endpoints.shopId, shopId))
      .returning({ shopId: endpoints.shopId });
    if (rows.length === 0) throw endpointNotFound();
    this.#o.logger.info({ shopId }, "webhook secret rotated");
    return { secret };
  }

  /**
   * The shop's deliveries, newest first. `limit` defaults to 50, at most 200.
   * Errors: INVALID_ARGUMENT (validation_failed) for a bad shop id or limit.
   */
  async listDeliveries(req: { shopId: string; limit: number; operationId?: string }) {
    const shopId = requireUuid(req.shopId, "shop_id");
    const operationId = req.operationId ? requireUuid(req.operationId, "operation_id") : undefined;
    if (req.limit < 0 || req.limit > MAX_LIST_LIMIT) {
      throw invalid("limit", `limit must be 1 to ${MAX_LIST_LIMIT}`);
    }
    const rows = await this.#o.db
      .select()
      .from(deliveries)
      .where(
        operationId
          ? and(eq(deliveries.shopId, shopId), eq(deliveries.operationId, operationId))
          : eq(deliveries.shopId, shopId),
      )
      .orderBy(desc(deliveries.createdAt), desc(deliveries.operationVersion), desc(deliveries.eventId))
      .limit(req.limit || DEFAULT_LIST_LIMIT);
    return {
      deliveries: rows.map((r) => ({
        eventId: r.eventId,
        eventType: r.eventType,
        operationId: r.operationId,
        status: r.status,
        attempts: r.attempts,
        lastStatusCode: r.lastStatusCode ?? undefined,
        lastError: r.lastError ?? undefined,
        createdAt: r.createdAt.toISOString(),
        nextAttemptAt: r.status === "pending" ? iso(r.nextAttemptAt) : undefined,
        deliveredAt: iso(r.deliveredAt),
      })),
    };
  }

  /**
   * Admin audit: the deliveries of every shop in event id order, a page at a time
   * (keyset on the event id), optionally only one status or only terminal event types.
   * Errors: INVALID_ARGUMENT (validation_failed) for a bad cursor or status.
   */
  /** The shop's webhook URL; never its secret. */
  async getEndpoint(req: { shopId: string }) {
    const shopId = requireUuid(req.shopId, "shop_id");
    const [row] = await this.#o.db
      .select({ url: endpoints.url })
      .from(endpoints)
      .where(eq(endpoints.shopId, shopId))
      .limit(1);
    return { url: row?.url };
  }

  async listDeliveriesAudit(req: ListDeliveriesAuditRequest) {
    const where: SQL[] = [];
    if (req.cursor !== "") where.push(gt(deliveries.eventId, requireUuid(req.cursor, "cursor")));
    if (req.status !== "") {
      if (!DELIVERY_STATUSES.includes(req.status))
        throw invalid("status", "status must be pending, delivered or failed");
      where.push(eq(deliveries.status, req.status as (typeof deliveries.$inferSelect)["status"]));
    }
    if (req.terminalOnly)
      where.push(sql`${deliveries.eventType} ~ '\\.(completed|rejected|cancelled|expired)$'`);
    const limit = req.limit > 0 ? Math.min(req.limit, AUDIT_PAGE.max) : AUDIT_PAGE.default;
    const rows = await this.#o.db
      .select()
      .from(deliveries)
      .where(and(...where))
      .orderBy(asc(deliveries.eventId))
      .limit(limit);
    return {
      deliveries: rows.map((r) => ({
        eventId: r.eventId,
        eventType: r.eventType,
        operationId: r.operationId,
        shopId: r.shopId,
        status: r.status,
        attempts: r.attempts,
        lastStatusCode: r.lastStatusCode ?? undefined,
        lastError: r.lastError ?? undefined,
        createdAt: r.createdAt.toISOString(),
        nextAttemptAt: r.status === "pending" ? iso(r.nextAttemptAt) : undefined,
        deliveredAt: iso(r.deliveredAt),
      })),
      nextCursor: rows.length === limit ? (rows.at(-1)?.eventId ?? "") : "",
    };
  }

  /**
   * Schedules one more attempt now, with the same webhook-id and body. A pending
   * delivery keeps its retry schedule; a delivered or failed one gets exactly one
   * attempt, and ends `failed` again if that fails.
   * Errors: NOT_FOUND when the event is not a delivery of this shop.
   */
  async redeliver(req: { shopId: string; eventId: string }) {
    const shopId = requireUuid(req.shopId, "shop_id");
    if (!UUID.test(req.eventId)) throw deliveryNotFound();
    const rows = await this.#o.db.transaction(async (tx) => {
      const updated = await tx
        .update(deliveries)
        .set({
          retryStep: sql`case when ${deliveries.status} = 'pending' then ${deliveries.retryStep} else ${this.#o.retrySteps} end`,
          status: "pending",
          nextAttemptAt: sql`now()`,
        })
        .where(and(eq(deliveries.eventId, req.eventId.toLowerCase()), eq(deliveries.shopId, shopId)))
        .returning({ eventId: deliveries.eventId });
      if (updated.length > 0) await tx.execute(sql`select pg_notify(${WAKE_CHANNEL}, '')`);
      return updated;
    });
    if (rows.length === 0) throw deliveryNotFound();
    this.#o.logger.info({ shopId, eventId: req.eventId }, "webhook redelivery scheduled");
    return {};
  }
}
