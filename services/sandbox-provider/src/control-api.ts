import type { Database, Sql } from "@gw/db";
import { parseRequestAmount } from "@gw/money";
import { asc, eq, inArray } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { books } from "./books.ts";
import type { CallbackSender } from "./callbacks.ts";
import { callbacks, legs, operations, providers } from "./db/schema.ts";
import { ApiError, parseBody } from "./errors.ts";
import { faultProfileSchema } from "./faults.ts";
import { providerView } from "./provider-api.ts";
import { settle } from "./settle.ts";

const behaviour = z.object({
  mode: z.enum(["accept", "decline", "no_answer"]),
  receipt_required: z.boolean().default(false),
  expires_in_seconds: z
    .number()
    .int()
    .min(1)
    .max(30 * 86_400)
    .optional(),
  delay_ms: z.number().int().min(0).max(600_000).optional(),
  decline_reason: z.string().min(1).max(128).optional(),
  withdraw: z.enum(["supported", "unsupported", "failing"]).optional(),
  faults: faultProfileSchema.optional(),
  requisites: z
    .object({
      card_number: z
        .string()
        .regex(/^\d{12,19}$/)
        .optional(),
      phone: z
        .string()
        .regex(/^\+?\d{10,15}$/)
        .optional(),
      bank_code: z.string().min(1).max(64).optional(),
      holder_name: z.string().min(1).max(256).optional(),
    })
    .optional(),
});
const providerName = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "lowercase letters, digits, '_' and '-'");
const putProvider = z.object({
  credentials: z.string().min(16, "at least 16 characters").max(512),
  payin: behaviour.default({ mode: "accept", receipt_required: false }),
  payout: behaviour.default({ mode: "accept", receipt_required: false }),
});
const settleBody = z
  .object({
    /** Needed only when several hosted providers hold an open operation with this reference. */
    provider: providerName.optional(),
    status: z.enum(["completed", "rejected"]).optional(),
    /** `[]` completes without legs: a provider that reports completion without decomposing it. */
    legs: z.array(z.string()).max(100).optional(),
  })
  // `status: completed` without legs completes as the provider's fault profile says
  // (the full amount in one leg when it has no settlement fault).
  .refine(
    (b) =>
      b.status === "rejected" ? b.legs === undefined : b.legs !== undefined || b.status === "completed",
    {
      message: "give legs or status completed to complete, or status rejected without legs",
      path: ["legs"],
    },
  );

export interface ControlApiDeps {
  db: Database;
  sql: Sql;
  sender: CallbackSender;
  controlToken: string | undefined;
}

/** The operator's side of the sandbox: provider behaviour, what was received, and settlement. */
export function controlApi(deps: ControlApiDeps) {
  const { db, sender } = deps;
  const api = new Hono();

  if (deps.controlToken !== undefined) {
    const expected = `Bearer ${deps.controlToken}`;
    api.use(async (c, next) => {
      if (c.req.header("authorization") !== expected)
        throw new ApiError(401, "unauthorized", "control token required");
      await next();
    });
  }

  api.put("/providers/:name", async (c) => {
    const name = providerName.safeParse(c.req.param("name"));
    if (!name.success)
      throw new ApiError(400, "validation_failed", name.error.issues[0]?.message ?? "bad name", "name");
    const body = await parseBody(c, putProvider);
    await db
      .insert(providers)
      .values({ name: name.data, credentials: body.credentials, payin: body.payin, payout: body.payout })
      .onConflictDoUpdate({
        target: providers.name,
        set: { credentials: body.credentials, payin: body.payin, payout: body.payout, updatedAt: new Date() },
      });
    // The gateway registers the provider under the same name with the sandbox's root as
    // its base URL; the connector adds `/providers/{name}` itself.
    const baseUrl = new URL("/", c.req.url).toString().replace(/\/$/, "");
    const providerUrl = `${baseUrl}/providers/${name.data}`;
    return c.json({
      name: name.data,
      base_url: baseUrl,
      provider_url: providerUrl,
      payin: body.payin,
      payout: body.payout,
    });
  });

  api.get("/operations/:operation_id", async (c) => {
    const reference = c.req.param("operation_id");
    const rows = await db
      .select()
      .from(operations)
      .where(eq(operations.reference, reference))
      .orderBy(asc(operations.createdAt));
    if (rows.length === 0) throw new ApiError(404, "not_found", "no provider received this operation");
    const ids = rows.map((r) => r.id);
    const allLegs = await db
      .select()
      .from(legs)
      .where(inArray(legs.operationId, ids))
      .orderBy(asc(legs.position));
    const allCallbacks = await db
      .select()
      .from(callbacks)
      .where(inArray(callbacks.operationId, ids))
      .orderBy(asc(callbacks.seq));
    return c.json({
      operation_id: reference,
      received: rows.map((op) => ({
        ...providerView(
          op,
          allLegs.filter((l) => l.operationId === op.id),
        ),
        provider: op.provider,
        decision: op.decision,
        method: op.method,
        amount: op.amount,
        currency: op.currency,
        destination:
          op.number === null
            ? undefined
            : { number: op.number, name: op.name ?? undefined, bankname: op.bankname ?? undefined },
        callback_url: op.callbackUrl,
        requests: op.requests,
        created_at: op.createdAt.toISOString(),
        settled_at: op.settledAt?.toISOString(),
        callbacks: allCallbacks
          .filter((cb) => cb.operationId === op.id)
          .map((cb) => ({
            callback_id: cb.id,
            attempts: cb.attempts,
            delivered_at: cb.deliveredAt?.toISOString(),
            abandoned_at: cb.abandonedAt?.toISOString(),
            last_status_code: cb.lastStatusCode ?? undefined,
            last_error: cb.lastError ?? undefined,
          })),
      })),
    });
  });

  api.post("/operations/:operation_id/settle", async (c) => {
    const reference = c.req.param("operation_id");
    const body = await parseBody(c, settleBody);
    const status = body.status ?? "completed";
    const amounts = body.legs?.map((text, i) => {
      const amount = parseRequestAmount(text);
      if (!amount || amount.lte(0)) {
        throw new ApiError(400, "validation_failed", "a leg is a positive decimal with scale 2", `legs.${i}`);
      }
      return amount.toFixed(2);
    });
    const result = await settle(deps.sql, sender, {
      reference,
      provider: body.provider,
      status,
      legs: amounts ?? "profile",
    });
    return c.json(result);
  });

  api.get("/books", async (c) => c.json(await books(deps.sql)));

  return api;
}
