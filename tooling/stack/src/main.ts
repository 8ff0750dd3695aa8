// `pnpm stack` / `./gw up`: the whole gateway on this machine, one process per service.
import { ensureNats, ensurePostgres, type Infra } from "./infra.ts";
import {
  ADMIN_TOKEN_FILE,
  DATA_DIR,
  LOCAL_WEBHOOK_PORT,
  LOCAL_WEBHOOK_URL,
  localAdminToken,
  localFlexibleLinkSecret,
  localReceiptUrlSecret,
  readSecret,
  WEBHOOK_SECRET_FILE,
} from "./local.ts";
import { consoleOutput } from "./log-format.ts";
import { startStackMetricsServer } from "./metrics.ts";
import { SERVICES } from "./services.ts";
import { ownStopSignals } from "./signals.ts";
import { defaultPorts, type Stack, startStack } from "./stack.ts";
import { startWebhookReceiver, type WebhookReceiver } from "./webhook-receiver.ts";

const out = consoleOutput([...SERVICES.map((s) => s.name), "webhooks-in"]);
const env = process.env;
/** `--replicas=N`: N processes of every service behind a round-robin balancer each. */
const replicas = Number(
  process.argv.find((a) => a.startsWith("--replicas="))?.slice(11) ?? env.STACK_REPLICAS ?? 1,
);
const cleanups: (() => Promise<void>)[] = [];

let stopping = false;
async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  out.notice("stopping");
  for (const cleanup of cleanups.reverse()) await cleanup().catch((e) => out.notice(`while stopping: ${e}`));
  process.exit(code);
}
const signals = ownStopSignals(() => void shutdown(0));

try {
  const postgres: Infra = await ensurePostgres(DATA_DIR, env.DATABASE_URL);
  cleanups.push(() => postgres.stop());
  // The embedded Postgres's package hooked the stop signals too; the cleanups stop it last.
  signals.reclaim();
  out.notice(`postgres: ${postgres.origin}`);
  const nats: Infra = await ensureNats(DATA_DIR, env.NATS_URL);
  cleanups.push(() => nats.stop());
  out.notice(`nats: ${nats.origin}`);
  const adminToken = localAdminToken();

  // The demo shop's webhooks come here, so the walk-through can show what was delivered.
  const receiver: WebhookReceiver = await startWebhookReceiver({
    port: LOCAL_WEBHOOK_PORT,
    secret: () => readSecret(WEBHOOK_SECRET_FILE),
    onWebhook: (hook) => {
      const body = hook.body as { type?: string; data?: { operation_id?: string; status?: string } };
      out.say(
        "webhooks-in",
        `${hook.id} ${body?.type ?? ""} ${body?.data?.operation_id ?? ""} ${hook.verified ? "signature ok" : `NOT VERIFIED: ${hook.error}`}`,
      );
    },
  });
  cleanups.push(() => receiver.stop());

  const stack: Stack = startStack({
    databaseUrl: postgres.url,
    natsUrl: nats.url,
    eventsPrefix: env.EVENTS_PREFIX ?? "gw",
    adminToken,
    receiptUrlSecret: localReceiptUrlSecret(),
    flexibleLinkSecret: localFlexibleLinkSecret(),
    logLevel: env.LOG_LEVEL ?? "info",
    ports: defaultPorts(),
    output: out,
    readyTimeoutMs: 120_000,
    replicas,
    // Every replica holds its own pool; one Postgres of 100 connections serves them all.
    ...(replicas > 1 && !env.DB_POOL_MAX ? { extraEnv: { DB_POOL_MAX: "3" } } : {}),
  });
  cleanups.push(() => stack.stop());
  // The supervisor's own metrics (its restart counter), beside the services' ports.
  const metricsPort = Number(env.STACK_METRICS_PORT ?? 9108);
  const metrics = await startStackMetricsServer(metricsPort);
  cleanups.push(() => new Promise<void>((resolve) => metrics.close(() => resolve())));
  if (replicas > 1) out.notice(`${replicas} replicas of every service, each behind a balancer on its port`);
  if (stack.missing.length > 0) out.notice(`not in the tree yet, not started: ${stack.missing.join(", ")}`);

  try {
    await stack.waitReady();
    out.notice("every service is ready");
  } catch (err) {
    out.notice(`${(err as Error).message}; the stack keeps running and restarting what dies`);
  }
  const { urls } = stack;
  out.notice(
    [
      "",
      `  merchant API   ${urls.edge}/v1     (admin API: ${urls.edge}/admin/v1)`,
      `  pay pages      ${urls.pay}`,
      `  back office    ${urls.backoffice}/backoffice   (log in with the admin token)`,
      `  sandbox        ${urls.sandbox}   (control API: ${urls.sandbox}/control)`,
      `  admin token    ${ADMIN_TOKEN_FILE}   (Authorization: Bearer $(cat .data/admin-token))`,
      `  webhooks seen  ${LOCAL_WEBHOOK_URL}   (GET lists what was delivered)`,
      `  restarts       http://127.0.0.1:${metricsPort}/metrics   (stack_process_restarts_total)`,
      "  next: ./gw demo   (in another terminal) sets up a shop and prints an API key and curl commands",
      "",
    ].join("\n"),
  );
} catch (err) {
  out.notice(`cannot start: ${err instanceof Error ? err.message : String(err)}`);
  await shutdown(1);
}
