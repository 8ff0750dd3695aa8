/**
 * CPU and round trips of the sandbox's create, in process (no HTTP listener, no callback
 * worker), on a fresh database: N sequential creates, then N at 64 in flight.
 *
 *   node services/sandbox-provider/bench/create.ts [N]
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof services/sandbox-provider/bench/create.ts
 *
 * Prints CPU µs per create (this process: the app, drizzle, postgres.js; not Postgres),
 * wall µs per sequential create and the statements sent per create.
 */
import { randomUUID } from "node:crypto";
import { createTestDatabase, migrateSchema } from "@gw/db";
import { inProcessApp, migrationsFolder } from "../src/app.ts";

const n = Number(process.argv[2] ?? 2000);
const database = await createTestDatabase();
let statements = 0;
const { app, sql, db } = inProcessApp(database.url, { onStatement: () => void statements++ });
try {
  await migrateSchema(sql, db, "sandbox", migrationsFolder);
  const credentials = "bench-credentials-00000001";
  await app.request("/control/providers/bench", {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ credentials }),
  });
  const create = async () => {
    const res = await app.request("/providers/bench/v1/payins", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${credentials}` },
      body: JSON.stringify({
        reference: randomUUID(),
        method: "WT_RUB_C2C",
        amount: "1000.00",
        currency: "RUB",
        callback_url: "http://127.0.0.1:9/callbacks/providers/bench",
      }),
    });
    if (res.status !== 200) throw new Error(`create answered ${res.status}: ${await res.text()}`);
    await res.text();
  };
  for (let i = 0; i < 200; i++) await create(); // warm-up: JIT, prepared statements, pool

  const measure = async (label: string, inFlight: number) => {
    statements = 0;
    const cpu = process.cpuUsage();
    const start = process.hrtime.bigint();
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next++ < n) await create();
      }),
    );
    const wallUs = Number(process.hrtime.bigint() - start) / 1000;
    const used = process.cpuUsage(cpu);
    console.error(
      `${label}: ${n} creates, CPU ${((used.user + used.system) / n).toFixed(0)} µs/create, ` +
        `wall ${(wallUs / n).toFixed(0)} µs/create, ${(statements / n).toFixed(2)} statements/create`,
    );
  };
  await measure("sequential", 1);
  await measure("64 in flight", 64);
} finally {
  await sql.end();
  await database.drop();
}
