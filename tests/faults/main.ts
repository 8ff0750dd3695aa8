/**
 * The fault suite: the whole stack on a private Postgres and a private NATS, a merchant
 * load loop that retries every call with the same keys, and a fault injector that
 * SIGKILLs a random service process at random moments (the supervisor restarts it),
 * stops and restarts NATS, and restarts Postgres with an immediate shutdown. Then it
 * quiesces and checks the invariants in SQL. Prints `faults injected: N, invariants
 * broken: M` and exits 1 when M > 0.
 *
 *   pnpm --filter @gw/tests faults [--kills=100] [--seconds=240] [--replicas=1] [--workers=4]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { requestJson } from "@gw/stack/http-json";
import { startEmbeddedPostgres } from "@gw/stack/infra";
import { freePort, probeTcp, waitFor } from "@gw/stack/net";
import { provisionShop } from "@gw/stack/provision";
import { SandboxClient } from "@gw/stack/sandbox-client";
import { startWebhookReceiver } from "@gw/stack/webhook-receiver";
import postgres from "postgres";
import { startTestStack } from "../src/stack.ts";

const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const KILLS = Number(arg("kills", "100"));
const SECONDS = Number(arg("seconds", "240"));
const REPLICAS = Number(arg("replicas", "1"));
const WORKERS = Number(arg("workers", "4"));
const print = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const uuid = () => crypto.randomUUID();

// --- private infrastructure -------------------------------------------------------
const dir = mkdtempSync(join(tmpdir(), "gw-faults-"));
chmodSync(dir, 0o755); // as root, Postgres runs as the postgres user and must reach it
const pg = await startEmbeddedPostgres(join(dir, "pg"), "gateway", {
  postgresFlags: ["-c", "max_connections=200"],
});
const natsPort = await freePort();
const natsStore = join(dir, "nats");
mkdirSync(natsStore, { recursive: true });
let nats: ChildProcess | undefined;
const startNats = async () => {
  nats = spawn("nats-server", ["-js", "-sd", natsStore, "-a", "127.0.0.1", "-p", String(natsPort)], {
    stdio: "ignore",
  });
  await waitFor("nats-server", () => probeTcp("127.0.0.1", natsPort), 15_000);
};
const stopNats = async () => {
  const p = nats;
  if (!p || p.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    p.once("exit", () => resolve());
    p.kill("SIGKILL");
  });
};
await startNats();

let webhookSecret: string | undefined;
const received = new Map<string, number>();
const receiver = await startWebhookReceiver({
  port: await freePort(),
  secret: () => webhookSecret,
  onWebhook: (hook) => received.set(hook.id, (received.get(hook.id) ?? 0) + 1),
});

const stack = await startTestStack({
  replicas: REPLICAS,
  infra: { databaseUrl: pg.url, natsUrl: `nats://127.0.0.1:${natsPort}` },
  extraEnv: { LOG_LEVEL: "warn", DB_POOL_MAX: REPLICAS > 1 ? "3" : "4", RECONCILE_INTERVAL_MS: "2000" },
});
print(
  `stack up: ${REPLICAS} replica(s) per service, private Postgres and NATS under ${dir}; log ${stack.logFile}`,
);
const sql = postgres(pg.url, { max: 2, onnotice: () => {} });

let faults = 0;
const faultLog: Record<string, number> = {};
const noteFault = (what: string) => {
  faults++;
  faultLog[what] = (faultLog[what] ?? 0) + 1;
};
let exitCode = 1;
try {
  const shop = await provisionShop({
    edgeUrl: stack.urls.edge,
    sandboxUrl: stack.urls.sandbox,
    adminToken: stack.adminToken,
    webhookUrl: receiver.url,
    name: "faults",
  });
  webhookSecret = shop.webhookSecret;
  const sandbox = new SandboxClient(stack.urls.sandbox);
  const headers = { "x-api-key": shop.apiKey };

  /**
   * A merchant's retry: the same call with the same key until an answer that is not
   * a failure of the gateway (a 5xx, a 429 or no answer at all), within `deadlineMs`.
   */
  const retry = async (what: string, call: () => Promise<unknown>, deadlineMs = 120_000) => {
    const deadline = Date.now() + deadlineMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        const status = (err as { status?: number }).status;
        if (status !== undefined && status >= 400 && status < 500 && status !== 429) return err;
        if (Date.now() > deadline) throw new Error(`${what}: no answer within ${deadlineMs} ms: ${err}`);
        retries++;
        await sleep(Math.min(2000, 100 * 2 ** Math.min(attempt, 5)));
      }
    }
  };
  let retries = 0;
  let calls = 0;
  const shownAfterCancel: string[] = [];
  const post = (path: string, body: Record<string, unknown>) => async () => {
    calls++;
    return (await requestJson("POST", `${stack.urls.edge}/v1${path}`, {
      headers,
      body,
      timeoutMs: 15_000,
    })) as Record<string, unknown>;
  };

  let loading = true;
  const worker = async () => {
    while (loading) {
      const mop = `f-${uuid()}`;
      const payment = {
        merchant_operation_id: mop,
        client_id: "faults",
        method: "WT_RUB_C2C",
        amount: "1000.00",
        currency: "RUB",
      };
      const roll = Math.random();
      try {
        if (roll < 0.15) {
          // Cancelled first: the cancel arrives before the create; the create must not show requisites.
          await retry("cancel first", post("/cancel_operation", { merchant_operation_id: mop }));
          const created = (await retry("create after cancel", post("/payment", payment))) as Record<
            string,
            unknown
          >;
          if (created && typeof created === "object" && "number" in created && created.number)
            shownAfterCancel.push(mop);
          continue;
        }
        if (roll < 0.3) {
          await retry("payout", post("/payout", { ...payment, number: "2200123456789010" }));
          continue;
        }
        const created = (await retry("create", post("/payment", payment))) as Record<string, unknown>;
        const id = created?.operation_id as string | undefined;
        if (!id) continue;
        if (roll < 0.45) {
          await retry("cancel", post("/cancel_operation", { operation_id: id }));
        } else if (roll < 0.9) {
          const outcome = Math.random() < 0.8 ? { legs: ["1000.00"] } : { status: "rejected" as const };
          await retry("settle", () => {
            calls++;
            return sandbox.settle(id, outcome);
          });
        }
      } catch (err) {
        print(`merchant gave up: ${(err as Error).message.slice(0, 300)}`);
      }
    }
  };

  const injector = async () => {
    const started = Date.now();
    const end = started + SECONDS * 1000;
    const instances = await stack.instances();
    let natsDone = false;
    let pgDone = false;
    let kills = 0;
    while (Date.now() < end || kills < KILLS) {
      const elapsed = (Date.now() - started) / (SECONDS * 1000);
      if (!natsDone && elapsed > 0.3) {
        natsDone = true;
        await stopNats();
        await sleep(3000 + Math.random() * 4000);
        await startNats();
        noteFault("nats stopped and restarted");
      }
      if (!pgDone && elapsed > 0.6) {
        pgDone = true;
        await pg.restartImmediately?.();
        noteFault("postgres immediate restart");
      }
      const pick = instances[Math.floor(Math.random() * instances.length)]!;
      const pid = stack.pid(pick.name);
      if (pid !== undefined) {
        try {
          process.kill(pid, "SIGKILL");
          kills++;
          noteFault(`SIGKILL ${pick.service}`);
        } catch {}
      }
      const left = Math.max(1, KILLS - kills);
      const remainingMs = Math.max(500, end - Date.now());
      await sleep(Math.random() * 2 * (remainingMs / left));
    }
  };

  const t0 = Date.now();
  const workers = Array.from({ length: WORKERS }, worker);
  await injector();
  loading = false;
  await Promise.all(workers);
  print(`load and faults: ${Math.round((Date.now() - t0) / 1000)} s, ${calls} calls, ${retries} retries`);

  // --- quiesce --------------------------------------------------------------------
  await stack.waitReady(180_000);
  const quiet = async () => {
    const [o] = await sql`
      select (select count(*) from operations.outbox where published_at is null)::int as unpublished,
             (select count(*) from webhooks.deliveries where status = 'pending')::int as pending,
             (select count(*) from operations.operations where status = 'routing')::int as routing,
             (select count(*) from operations.outbox e where not exists
                (select 1 from webhooks.deliveries d where d.event_id = e.id))::int as undelivered`;
    return o!.unpublished === 0 && o!.pending === 0 && o!.routing === 0 && o!.undelivered === 0;
  };
  await waitFor("the stack to quiesce", quiet, 180_000, 1000).catch((e) => print(String(e)));
  await sleep(3000);

  // --- invariants -----------------------------------------------------------------
  const checks: [string, () => Promise<readonly unknown[]>][] = [
    [
      "every ledger transfer balances (per currency, debits = credits)",
      () => sql`select transfer_id, currency from ledger.postings group by transfer_id, currency
                having sum(case when side = 'debit' then amount else -amount end) <> 0 limit 20`,
    ],
    [
      "every account balance equals its postings",
      () => sql`select a.id, a.balance, coalesce(sum(case when p.side = 'credit' then p.amount else -p.amount end), 0) as postings
                from ledger.accounts a left join ledger.postings p on p.account_id = a.id
                group by a.id having a.balance <> coalesce(sum(case when p.side = 'credit' then p.amount else -p.amount end), 0) limit 20`,
    ],
    [
      "one operation per shop and merchant_operation_id",
      () => sql`select shop_id, merchant_operation_id, count(*) from operations.operations
                group by 1, 2 having count(*) > 1 limit 20`,
    ],
    [
      "no payout over-allocated (free + reserved + paid + handed off = amount, parts match slots and contributions)",
      () => sql`select p.operation_id from matching.pool_payouts p
                where p.free_amount + p.reserved_amount + p.paid_amount + p.handed_off_amount <> p.amount
                   or least(p.free_amount, p.reserved_amount, p.paid_amount, p.handed_off_amount) < 0
                   or p.reserved_amount <> coalesce((select sum(s.amount) from matching.slots s where s.payout_id = p.operation_id and s.status = 'reserved'), 0)
                limit 20`,
    ],
    [
      "every committed change has its event published (operations, ledger, matching outboxes)",
      async () => [
        ...(await sql`select 'operations' as schema, id from operations.outbox where published_at is null limit 10`),
        ...(await sql`select 'ledger' as schema, id from ledger.outbox where published_at is null limit 10`),
        ...(await sql`select 'matching' as schema, id from matching.outbox where published_at is null limit 10`.catch(
          () => [],
        )),
      ],
    ],
    [
      "every operation event applied once by webhooks (one delivery per event of a shop with an endpoint)",
      () => sql`select o.id from operations.outbox o
                where o.subject like '%.operations.%'
                  and not exists (select 1 from webhooks.deliveries d where d.event_id = o.id)
                limit 20`,
    ],
    [
      "every money event applied once by the ledger (payment.completed, payout.pending/completed/rejected/cancelled in its inbox)",
      () => sql`select o.id, o.subject from operations.outbox o
                where o.subject ~ '\\.operations\\.(payment\\.completed|payout\\.(pending|completed|rejected|cancelled))$'
                  and (select count(*) from ledger.inbox i where i.event_id = o.id) <> 1
                limit 20`,
    ],
    [
      "every terminal operation has its terminal webhook delivered or visibly failed",
      () => sql`select op.id, op.type, op.status from operations.operations op
                where op.status in ('completed', 'rejected', 'cancelled')
                  and not exists (select 1 from webhooks.deliveries d where d.operation_id = op.id
                                  and d.event_type = op.type || '.' || op.status and d.status in ('delivered', 'failed'))
                limit 20`,
    ],
    [
      "no cancelled-first payment ever showed requisites (create answers, and no payment.pending event)",
      async () => [
        ...shownAfterCancel.map((mop) => ({ mop, seen: "create answer carried requisites" })),
        ...(await sql`select op.id from operations.operations op
                      where op.cancelled_by_command and op.status = 'cancelled' and op.number is null
                        and exists (select 1 from webhooks.deliveries d where d.operation_id = op.id and d.event_type = 'payment.pending')
                      limit 20`),
      ],
    ],
  ];
  let broken = 0;
  for (const [name, check] of checks) {
    try {
      const rows = await check();
      if (rows.length > 0) broken++;
      print(
        `${rows.length === 0 ? "ok    " : "BROKEN"} ${name}${rows.length ? `: ${JSON.stringify(rows.slice(0, 5))}` : ""}`,
      );
    } catch (err) {
      broken++;
      print(`ERROR  ${name}: ${(err as Error).message}`);
    }
  }
  const [counts] = await sql`select count(*)::int as operations,
      count(*) filter (where status = 'completed')::int as completed,
      count(*) filter (where status = 'cancelled')::int as cancelled,
      count(*) filter (where status = 'rejected')::int as rejected,
      count(*) filter (where type = 'payout')::int as payouts from operations.operations`;
  print(`operations: ${JSON.stringify(counts)}; webhooks received: ${received.size} distinct`);
  print(`faults by kind: ${JSON.stringify(faultLog)}`);
  print(`faults injected: ${faults}, invariants broken: ${broken}`);
  exitCode = broken === 0 ? 0 : 1;
} finally {
  await sql.end().catch(() => {});
  await stack.stop().catch(() => {});
  await receiver.stop().catch(() => {});
  await stopNats();
  await pg.stop().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}
process.exit(exitCode);
