/**
 * The conservation checker alone, against any running stack:
 *
 *   pnpm --filter @gw/tests conservation --gateway=URL --sandbox=URL --admin-token=T --database=URL
 *     [--control-token=T]
 *
 * Reads the sandbox's books through its control API, the operator's dead-letter and
 * provider-fact lists through the admin API, and the gateway's operations, ledger,
 * outboxes, inboxes and deliveries with read-only selects on `--database` (this branch
 * has no admin read of those yet). Prints the table and `N of M invariants broken`;
 * exits 1 when any is broken. Without the run's webhook receivers it cannot tell
 * whether a delivered webhook arrived signed; it checks the delivery records only.
 */
import postgres from "postgres";
import { adminList, checkConservation, renderTable } from "./conservation.ts";
import { readBooks } from "./provider-load.ts";

/** `--name=value` or `--name value`; else the environment variable NAME (dashes as underscores). */
const arg = (name: string) => {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (hit) return hit.slice(name.length + 3);
  const at = process.argv.indexOf(`--${name}`);
  if (at >= 0 && process.argv[at + 1]) return process.argv[at + 1];
  return process.env[name.toUpperCase().replaceAll("-", "_")];
};
const gateway = arg("gateway");
const sandbox = arg("sandbox");
const adminToken = arg("admin-token");
const database = arg("database") ?? process.env.DATABASE_URL;
if (!gateway || !sandbox || !adminToken || !database) {
  process.stderr.write("usage: conservation --gateway=URL --sandbox=URL --admin-token=T --database=URL\n");
  process.exit(2);
}
const sql = postgres(database, { max: 2, onnotice: () => {} });
try {
  const results = await checkConservation({
    sql,
    books: await readBooks(sandbox, arg("control-token")),
    lists: {
      deadLetters: await adminList(gateway, adminToken, "/dead-letters", "dead_letters"),
      providerFacts: await adminList(gateway, adminToken, "/provider-facts", "provider_facts"),
    },
  });
  process.stdout.write(`${renderTable(results)}\n`);
  process.exitCode = results.some((r) => r.violations.length > 0) ? 1 : 0;
} finally {
  await sql.end();
}
