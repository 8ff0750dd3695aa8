/**
 * `--provider-faults` of the fault suite: a shop of its own routed through two faulty
 * sandbox providers, a seeded load through them beside the suite's own load, and at the
 * end the conservation checker (or, with `--tamper`, its self-test).
 */
import { AdminClient } from "@gw/stack/admin-client";
import { DEMO_PRICING } from "@gw/stack/provision";
import { startWebhookReceiver } from "@gw/stack/webhook-receiver";
import type postgres from "postgres";
import {
  adminList,
  checkConservation,
  readGatewayByAdminApi,
  renderTable,
  TAMPER_CASES,
  tamperSelfTest,
} from "./conservation.ts";
import { allFaults, LATE_RECORDING, SHORT_RUN_FAULTS } from "./profiles.ts";
import {
  type LoadFigures,
  providerFaultLoad,
  quiesce,
  readBooks,
  setUpFaultyProviders,
} from "./provider-load.ts";

export interface ProviderFaultRun {
  /** Resolves with the operations by kind once `keepGoing` turns false. */
  load: Promise<LoadFigures>;
  /** Quiesces (bounded), checks, prints; returns how many invariants are broken (or missed by `--tamper`). */
  finish(options: { tamper: boolean; stackStopped: boolean }): Promise<number>;
}

/** Starts the provider-fault part of a fault run on a running stack. */
export async function startProviderFaults(options: {
  stack: { urls: { edge: string; sandbox: string }; adminToken: string };
  merchantId: string;
  sql: postgres.Sql;
  seed: string;
  /** `all` (every fault kind) or `short` (only those today's code comes through). */
  profile: string;
  keepGoing: () => boolean;
  print: (line: string) => void;
  /**
   * The run's verified webhooks by event id, shared with its other receivers: every
   * terminal-webhook check looks at every shop's operations.
   */
  received: Map<string, number>;
  noteUnverified: () => void;
}): Promise<ProviderFaultRun> {
  const { stack, sql, print } = options;
  const admin = new AdminClient(stack.urls.edge, stack.adminToken);
  const shopId = await admin.createShop(options.merchantId, "faulty providers shop");
  const apiKey = await admin.issueApiKey(shopId);
  await admin.putPricing(shopId, "WT_RUB_C2C", {
    payin: [DEMO_PRICING.payin],
    payout: [DEMO_PRICING.payout],
  });
  const { received } = options;
  let unverified = 0;
  let secret: string | undefined;
  const receiver = await startWebhookReceiver({
    secret: () => secret,
    onWebhook: (hook) => {
      if (hook.verified) received.set(hook.id, (received.get(hook.id) ?? 0) + 1);
      else {
        unverified++;
        options.noteUnverified();
      }
    },
  });
  const settings = await admin.putSettings(shopId, { webhook_url: receiver.url });
  secret = settings.webhook_secret ?? (await admin.rotateWebhookSecret(shopId));
  await setUpFaultyProviders({
    edgeUrl: stack.urls.edge,
    sandboxUrl: stack.urls.sandbox,
    adminToken: stack.adminToken,
    shopId,
    tables: options.profile === "short" ? SHORT_RUN_FAULTS : allFaults(),
    seed: options.seed,
    // Longer than the operations service's provider attempt timeout (5 s by default).
    slowMs: 7_000,
    lateRecording: LATE_RECORDING,
  });
  print(
    `provider faults (${options.profile}): shop ${shopId}, providers faulty-a and faulty-b, payouts first at faulty-late (records ${LATE_RECORDING.probability * 100} % of creates ${LATE_RECORDING.slowMs / 1000} s late), seed ${options.seed}`,
  );
  const load = providerFaultLoad({
    edgeUrl: stack.urls.edge,
    sandboxUrl: stack.urls.sandbox,
    apiKey,
    seed: options.seed,
    operations: Number.POSITIVE_INFINITY,
    concurrency: 2,
    keepGoing: options.keepGoing,
    callDeadlineMs: 120_000,
    onError: (m) => print(`provider-fault merchant gave up: ${m}`),
  });

  const finish = async ({ tamper, stackStopped }: { tamper: boolean; stackStopped: boolean }) => {
    try {
      print(`provider-fault operations by kind: ${JSON.stringify(await load)}`);
      if (!stackStopped) {
        const left = await quiesce(sql, 120_000);
        print(`provider-fault quiesce, still outstanding: ${JSON.stringify(left)}`);
      }
      if (tamper) return await selfTest(sql, received, print);
      const books = await readBooks(stack.urls.sandbox);
      print(`provider faults injected by kind: ${JSON.stringify(books.faults)}`);
      const results = await checkConservation({
        gateway: await readGatewayByAdminApi(stack.urls.edge, stack.adminToken),
        books,
        lists: {
          deadLetters: await adminList(stack.urls.edge, stack.adminToken, "/dead-letters", "dead_letters"),
          providerFacts: await adminList(
            stack.urls.edge,
            stack.adminToken,
            "/provider-facts",
            "provider_facts",
          ),
        },
        received,
        unverified,
      });
      print(renderTable(results, undefined, 40));
      return results.filter((r) => r.violations.length > 0).length;
    } finally {
      await receiver.stop().catch(() => {});
    }
  };
  return { load, finish };
}

/** The checker's tamper self-test, printed; returns how many cases were not reported. */
async function selfTest(
  sql: postgres.Sql,
  received: ReadonlyMap<string, number>,
  print: (line: string) => void,
): Promise<number> {
  const outcomes = await tamperSelfTest(sql, received);
  for (const o of outcomes) print(`tamper ${o.name}: ${o.outcome}`);
  const caught = outcomes.filter((o) => o.outcome === "reported BROKEN").length;
  print(`tamper: ${caught} of ${TAMPER_CASES.length} corrupted conservation invariant cases reported broken`);
  return TAMPER_CASES.length - caught;
}
