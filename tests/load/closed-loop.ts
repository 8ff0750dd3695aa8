/**
 * The closed loop of issue 17, bounded in time: a fresh test stack, then 64 connections
 * (by default) in turn on each of the four merchant endpoints of the issue (a create
 * with one key replayed, get_operation_state, balances, creates with fresh keys), in
 * slices, until the time is up. It prints each round and a summary, and exits 1 when any
 * process of the stack exited without being asked to, or a request got no answer.
 *
 *   pnpm --filter @gw/tests closed-loop [--minutes=10] [--connections=64] [--slice=15000]
 */
import { loadavg } from "node:os";
import { MerchantClient } from "../src/merchant.ts";
import { startTestStack, stopAndReportExits } from "../src/stack.ts";
import { type Endpoint, fire, type Run } from "./fire.ts";

const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const minutes = Number(arg("minutes", "10"));
const connections = Number(arg("connections", "64"));
const sliceMs = Number(arg("slice", "15000"));

const print = (line: string) => process.stdout.write(`${line}\n`);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

print(
  `closed loop: ${minutes} min, ${connections} connections, ${sliceMs / 1000} s per endpoint in turn; load average ${load()}`,
);
const stack = await startTestStack({ extraEnv: { LOG_LEVEL: "warn" } });
let exitCode = 0;
try {
  const shop = await stack.provisionShop({ name: "closed-loop" });
  const merchant = new MerchantClient(stack.urls.edge, shop.apiKey);
  const known: string[] = [];
  for (let i = 0; i < 50; i++) {
    const mop = `seed-${crypto.randomUUID()}`;
    await merchant.createPayment({
      merchant_operation_id: mop,
      client_id: "loop",
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
    });
    known.push(mop);
  }
  const payment = (mop: string) =>
    JSON.stringify({
      merchant_operation_id: mop,
      client_id: "loop",
      method: "WT_RUB_C2C",
      amount: "1000.00",
      currency: "RUB",
    });
  const replayed = payment(known[0] as string);
  const endpoints: Endpoint[] = [
    { name: "POST /v1/payment (replayed)", method: "POST", path: "/v1/payment", body: () => replayed },
    {
      name: "POST /v1/get_operation_state",
      method: "POST",
      path: "/v1/get_operation_state",
      body: () => JSON.stringify({ merchant_operation_id: known[Math.floor(Math.random() * known.length)] }),
    },
    { name: "GET /v1/balances", method: "GET", path: "/v1/balances" },
    {
      name: "POST /v1/payment (fresh)",
      method: "POST",
      path: "/v1/payment",
      body: () => payment(`loop-${crypto.randomUUID()}`),
    },
  ];

  const runs = new Map<string, Run[]>(endpoints.map((e) => [e.name, []]));
  const end = Date.now() + minutes * 60_000;
  let round = 0;
  // autocannon runs whole seconds: less than one left ends the loop.
  while (end - Date.now() >= 1_000) {
    round++;
    for (const ep of endpoints) {
      const left = end - Date.now();
      if (left < 1_000) break;
      const run = await fire(stack, shop.apiKey, ep, {
        mode: "closed",
        durationMs: Math.min(sliceMs, left),
        connections,
      });
      runs.get(ep.name)?.push(run);
    }
    print(
      `round ${round}: ${endpoints.map((e) => `${e.name} ${runs.get(e.name)?.at(-1)?.okPerSec.toFixed(0) ?? "-"}/s`).join(", ")}; unexpected exits so far ${stack.unexpectedExits().length}; load ${load()}`,
    );
  }

  print("\nendpoint                       | 200s    | 200/s | worst p99 ms | other answers | no answer");
  let unanswered = 0;
  for (const ep of endpoints) {
    const list = runs.get(ep.name) ?? [];
    const ok = list.reduce((n, r) => n + r.ok, 0);
    const seconds = list.reduce((n, r) => n + r.ok / Math.max(r.okPerSec, 1e-9), 0);
    const other: Record<string, number> = {};
    for (const r of list)
      for (const [code, n] of Object.entries(r.codes))
        if (code !== "200") other[code] = (other[code] ?? 0) + n;
    const lost = list.reduce((n, r) => n + r.errors + r.timeouts, 0);
    unanswered += lost;
    print(
      `${ep.name.padEnd(30)} | ${String(ok).padStart(7)} | ${(ok / Math.max(seconds, 1e-9)).toFixed(0).padStart(5)} | ${Math.max(
        0,
        ...list.map((r) => r.p99),
      )
        .toFixed(0)
        .padStart(12)} | ${
        Object.entries(other)
          .map(([c, n]) => `${c}:${n}`)
          .join(" ") || "none"
      } | ${lost}`,
    );
  }
  if (unanswered > 0) {
    print(`${unanswered} request(s) got no answer (socket error or timeout)`);
    exitCode = 1;
  }
} finally {
  if ((await stopAndReportExits(stack, print)) > 0) exitCode = 1;
}
process.exit(exitCode);
