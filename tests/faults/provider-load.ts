/**
 * Provider faults in a running stack: two faulty sandbox providers in one route (so an
 * operation one of them fails can go to the other), a seeded merchant load through them,
 * and the wait for quiescence before the conservation checker runs. Shared by the fault
 * suite (`--provider-faults`) and the short run in the normal test run.
 */
import { createHash, randomBytes } from "node:crypto";
import { CONSUMER_SUBJECTS, subjectsRegex } from "@gw/events";
import type { Books } from "@gw/sandbox-provider/books";
import { AdminClient } from "@gw/stack/admin-client";
import { HttpError, requestJson } from "@gw/stack/http-json";
import type postgres from "postgres";
import type { FaultTables, LATE_RECORDING } from "./profiles.ts";

/** The providers' books, through the sandbox's control API. */
export async function readBooks(sandboxUrl: string, controlToken?: string): Promise<Books> {
  return (await requestJson("GET", `${sandboxUrl}/control/books`, {
    headers: controlToken ? { authorization: `Bearer ${controlToken}` } : {},
    timeoutMs: 60_000,
  })) as Books;
}

/** A number in [0, 1) from the parts: the load's seeded choices. */
/** The subjects the ledger and webhooks consumers read, as Postgres regexes: only those reach their inboxes. */
const READS_LEDGER = subjectsRegex([
  ...CONSUMER_SUBJECTS.ledger,
  ...CONSUMER_SUBJECTS["ledger-provider-facts"],
]);
const READS_WEBHOOKS = subjectsRegex(CONSUMER_SUBJECTS.webhooks);
const roll = (...parts: (string | number)[]) =>
  createHash("sha256").update(parts.join("\u0000")).digest().readUInt32BE(0) / 2 ** 32;

export interface FaultyProviders {
  names: string[];
}

/**
 * Registers `names` in the sandbox (payins and payouts with the fault `tables`, seeded
 * by `seed`) and in the gateway, and routes the shop's WT_RUB_C2C payins and payouts
 * through them in that order.
 */
export async function setUpFaultyProviders(options: {
  edgeUrl: string;
  sandboxUrl: string;
  adminToken: string;
  shopId: string;
  tables: FaultTables;
  seed: string;
  /** How long a slow fault waits: longer than the gateway's provider attempt timeout. */
  slowMs: number;
  names?: string[];
  /**
   * A provider first on the payout route that records a share of its payouts' creates
   * only this late (`record_after_delay`, longer than the whole create budget), and
   * tombstones a key it is asked to withdraw before that: `faulty-late`.
   */
  lateRecording?: typeof LATE_RECORDING;
}): Promise<FaultyProviders> {
  const names = options.names ?? ["faulty-a", "faulty-b"];
  const admin = new AdminClient(options.edgeUrl, options.adminToken);
  const late = options.lateRecording;
  if (late) {
    const credentials = randomBytes(24).toString("base64url");
    const faults = {
      seed: `${options.seed}:faulty-late`,
      slow_ms: late.slowMs,
      create: { record_after_delay: late.probability },
    };
    await requestJson("PUT", `${options.sandboxUrl}/control/providers/faulty-late`, {
      body: { credentials, payin: { mode: "accept" }, payout: { mode: "accept", faults } },
    });
    await admin.putProvider("faulty-late", {
      kind: "sandbox",
      base_url: options.sandboxUrl,
      credentials,
      methods: ["WT_RUB_C2C"],
    });
  }
  for (const name of names) {
    const credentials = randomBytes(24).toString("base64url");
    const faults = { seed: `${options.seed}:${name}`, slow_ms: options.slowMs, ...options.tables };
    await requestJson("PUT", `${options.sandboxUrl}/control/providers/${name}`, {
      body: { credentials, payin: { mode: "accept", faults }, payout: { mode: "accept", faults } },
    });
    await admin.putProvider(name, {
      kind: "sandbox",
      base_url: options.sandboxUrl,
      credentials,
      methods: ["WT_RUB_C2C"],
    });
  }
  await admin.putRoute(options.shopId, "WT_RUB_C2C", {
    payin: names,
    payout: late ? ["faulty-late", ...names] : names,
    settlement_currency: "RUB",
  });
  return { names };
}

/** Operations by kind and what the load did with them. */
export type LoadFigures = Record<string, number>;

/**
 * A seeded merchant load through the faulty route: payments and payouts of varied
 * amounts; each created one is then settled completed (legs as the provider's settlement
 * faults say) or rejected at every provider that holds it open — also one the gateway
 * did not route it to — or cancelled, or left pending. Every call is retried with the
 * same key on a 5xx, 429 or no answer, within `callDeadlineMs`. Stops after `operations`
 * or when `keepGoing` says so.
 */
export async function providerFaultLoad(options: {
  edgeUrl: string;
  sandboxUrl: string;
  apiKey: string;
  seed: string;
  operations: number;
  concurrency: number;
  keepGoing?: () => boolean;
  callDeadlineMs?: number;
  onError?: (message: string) => void;
}): Promise<LoadFigures> {
  const figures: LoadFigures = {};
  const note = (kind: string) => {
    figures[kind] = (figures[kind] ?? 0) + 1;
  };
  const deadlineMs = options.callDeadlineMs ?? 60_000;
  const retry = async <T>(call: () => Promise<T>): Promise<T | HttpError> => {
    const deadline = Date.now() + deadlineMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        const status = err instanceof HttpError ? err.status : undefined;
        if (err instanceof HttpError && status !== undefined && status < 500 && status !== 429) return err;
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, Math.min(2000, 100 * 2 ** Math.min(attempt, 4))));
      }
    }
  };
  const api = (path: string, body: unknown) => () =>
    requestJson("POST", `${options.edgeUrl}/v1${path}`, {
      headers: { "x-api-key": options.apiKey },
      body,
      timeoutMs: 15_000,
    }) as Promise<Record<string, unknown>>;
  const control = (path: string, body?: unknown) => () =>
    requestJson(body === undefined ? "GET" : "POST", `${options.sandboxUrl}/control${path}`, {
      body,
      timeoutMs: 15_000,
    }) as Promise<Record<string, unknown>>;

  const one = async (i: number) => {
    const r = (what: string) => roll(options.seed, i, what);
    const type = r("type") < 0.6 ? "payment" : "payout";
    // Varied amounts with kopecks, so a rounding slip shows in the books.
    const amount = (100 + Math.floor(r("amount") * 490_000) / 100).toFixed(2);
    const mop = `pf-${options.seed}-${i}`;
    const body: Record<string, unknown> = {
      merchant_operation_id: mop,
      client_id: "provider-faults",
      method: "WT_RUB_C2C",
      amount,
      currency: "RUB",
    };
    if (type === "payout") Object.assign(body, { number: "2200123456789010", name: "Ivan Ivanov" });
    const created = await retry(api(`/${type}`, body));
    const id = created instanceof HttpError ? undefined : (created.operation_id as string | undefined);
    if (!id) {
      note(`${type} refused`);
      return;
    }
    const action = r("action");
    if (action < 0.6 || (action < 0.75 && type === "payout")) {
      await settleEverywhere(id, action < 0.6 ? { status: "completed" } : { status: "rejected" });
      note(`${type} ${action < 0.6 ? "settled" : "rejected by its provider"}`);
    } else if (action < 0.75) {
      await settleEverywhere(id, { status: "rejected" });
      note(`${type} rejected by its provider`);
    } else if (action < 0.9 && type === "payment") {
      await retry(api("/cancel_operation", { operation_id: id }));
      note(`${type} cancelled`);
    } else {
      note(`${type} left pending`);
    }
  };

  /** Settles the reference at every provider that holds it open, as the payer or bank would. */
  const settleEverywhere = async (id: string, outcome: { status: "completed" | "rejected" }) => {
    const view = await retry(control(`/operations/${id}`));
    if (view instanceof HttpError) return;
    const received = (view.received ?? []) as { provider: string; status: string; decision: string }[];
    for (const held of received.filter((h) => h.status === "pending" && h.decision !== "declined")) {
      await retry(control(`/operations/${id}/settle`, { ...outcome, provider: held.provider }));
    }
  };

  let next = 0;
  const worker = async () => {
    while (next < options.operations && (options.keepGoing?.() ?? true)) {
      const i = next++;
      try {
        await one(i);
      } catch (err) {
        note("merchant gave up");
        options.onError?.((err as Error).message.slice(0, 300));
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return figures;
}

/**
 * Waits (bounded) until the stack is quiet for the checker: every outbox published, every
 * operation event applied by the ledger and webhooks, no delivery pending, no create
 * routing, every sandbox callback delivered or abandoned, and no operation pending at the
 * gateway whose provider has its final result. Returns what was still outstanding.
 */
export async function quiesce(sql: postgres.Sql, timeoutMs: number): Promise<Record<string, number>> {
  const deadline = Date.now() + timeoutMs;
  let last: Record<string, number> = {};
  for (;;) {
    const [row] = await sql<Record<string, number>[]>`
      select (select count(*) from operations.outbox where published_at is null)::int as operations_unpublished,
             (select count(*) from ledger.outbox where published_at is null)::int as ledger_unpublished,
             (select count(*) from operations.outbox e where e.subject ~ ${READS_LEDGER} and not exists
                (select 1 from ledger.inbox i where i.consumer in ('ledger', 'ledger-provider-facts')
                  and i.event_id = e.id))::int as ledger_unapplied,
             (select count(*) from operations.outbox e where e.subject ~ ${READS_WEBHOOKS} and not exists
                (select 1 from webhooks.inbox i where i.consumer = 'webhooks' and i.event_id = e.id))::int as webhooks_unapplied,
             (select count(*) from webhooks.deliveries where status = 'pending')::int as deliveries_pending,
             (select count(*) from operations.operations where status = 'routing')::int as routing,
             (select count(*) from sandbox.callbacks where delivered_at is null and abandoned_at is null)::int as callbacks_due,
             (select count(*) from operations.withdrawals where status = 'asking')::int as withdrawals_asking,
             (select count(*) from operations.operations op join sandbox.operations s
                on s.reference = op.id::text and s.provider = op.provider
              where op.status in ('pending', 'awaiting_confirmation')
                and s.status in ('completed', 'rejected'))::int as behind_provider`;
    last = row ?? {};
    if (Object.values(last).every((n) => n === 0) || Date.now() > deadline) return last;
    await new Promise((r) => setTimeout(r, 500));
  }
}
