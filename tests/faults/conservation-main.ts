/**
 * The conservation checker alone, against any running stack (a staging one included):
 *
 *   pnpm --filter @gw/tests conservation --gateway=URL --sandbox=URL --admin-token=T
 *     [--control-token=T] [--tamper --database=URL]
 *
 * Reads the sandbox's books through its control API and everything of the gateway
 * through the admin API with the admin token only: the audit reads
 * (`/admin/v1/audit/...`: operations, ledger clearing per operation and shop, event
 * health, webhook deliveries) and the dead-letter and provider-fact lists. Prints the
 * table and `N of M invariants broken`; exits 1 when any is broken. Without the run's
 * webhook receivers it cannot tell whether a delivered webhook arrived signed; it checks
 * the delivery records only.
 *
 * `--tamper` runs the self-test instead: each invariant's guarded state is corrupted
 * inside a database transaction that the checker reads through and that is then rolled
 * back. Only it needs `--database` (a role that may `set session_replication_role`).
 */
import postgres from "postgres";
import {
  adminList,
  checkConservation,
  readGatewayByAdminApi,
  renderTable,
  tamperSelfTest,
} from "./conservation.ts";
import { readBooks } from "./provider-load.ts";

const USAGE = `usage: conservation --gateway=URL --sandbox=URL --admin-token=T [--control-token=T]
       conservation --tamper --database=URL
  --gateway, --sandbox, --admin-token  the check, through the admin and control APIs only
  --tamper --database=URL              the self-test: corrupts each invariant's state in a
                                       transaction it reads through, then rolls it back;
                                       the only use of a database URL
`;

/** `--name=value` or `--name value`; else the environment variable NAME (dashes as underscores). */
const arg = (name: string) => {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (hit) return hit.slice(name.length + 3);
  const at = process.argv.indexOf(`--${name}`);
  if (at >= 0 && process.argv[at + 1] && !process.argv[at + 1]?.startsWith("--")) return process.argv[at + 1];
  return process.env[name.toUpperCase().replaceAll("-", "_")];
};

if (process.argv.includes("--help")) {
  process.stdout.write(USAGE);
} else if (process.argv.includes("--tamper")) {
  const database = arg("database") ?? process.env.DATABASE_URL;
  if (!database) {
    process.stderr.write(USAGE);
    process.exit(2);
  }
  const sql = postgres(database, { max: 2, onnotice: () => {} });
  try {
    const outcomes = await tamperSelfTest(sql);
    for (const o of outcomes) process.stdout.write(`tamper ${o.name}: ${o.outcome}\n`);
    const caught = outcomes.filter((o) => o.outcome === "reported BROKEN").length;
    process.stdout.write(
      `tamper: ${caught} of ${outcomes.length} corrupted invariant cases reported broken\n`,
    );
    process.exitCode = caught === outcomes.length ? 0 : 1;
  } finally {
    await sql.end();
  }
} else {
  const gateway = arg("gateway");
  const sandbox = arg("sandbox");
  const adminToken = arg("admin-token");
  if (!gateway || !sandbox || !adminToken) {
    process.stderr.write(USAGE);
    process.exit(2);
  }
  const results = await checkConservation({
    gateway: await readGatewayByAdminApi(gateway, adminToken),
    books: await readBooks(sandbox, arg("control-token")),
    lists: {
      deadLetters: await adminList(gateway, adminToken, "/dead-letters", "dead_letters"),
      providerFacts: await adminList(gateway, adminToken, "/provider-facts", "provider_facts"),
    },
  });
  process.stdout.write(`${renderTable(results)}\n`);
  process.exitCode = results.some((r) => r.violations.length > 0) ? 1 : 0;
}
