// `pnpm migrate`: applies every service's migrations (each service's own `src/migrate.ts`).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ensurePostgres } from "./infra.ts";
import { DATA_DIR, localAdminToken } from "./local.ts";
import { SERVICES } from "./services.ts";
import { REPO_ROOT } from "./stack.ts";

const postgres = await ensurePostgres(DATA_DIR, process.env.DATABASE_URL);
/** A migration that takes longer is stuck (waiting on a lock, say): it is stopped and reported. */
const MIGRATION_TIMEOUT_MS = 120_000;
let failed = 0;
for (const { name } of SERVICES) {
  const script = join(REPO_ROOT, "services", name, "src", "migrate.ts");
  if (!existsSync(script)) continue;
  const run = spawnSync(process.execPath, [script], {
    cwd: REPO_ROOT,
    // Each migrate.ts reads its service's whole config; the edge's requires ADMIN_TOKEN.
    env: { ...process.env, DATABASE_URL: postgres.url, ADMIN_TOKEN: localAdminToken() },
    stdio: "inherit",
    timeout: MIGRATION_TIMEOUT_MS,
    killSignal: "SIGKILL",
  });
  const ok = run.status === 0;
  if (!ok) failed++;
  process.stdout.write(
    `[migrate] ${name}: ${ok ? "ok" : `failed (${run.signal === "SIGKILL" ? `stuck, stopped after ${MIGRATION_TIMEOUT_MS} ms` : `exit ${run.status}`})`}\n`,
  );
}
await postgres.stop();
process.exit(failed === 0 ? 0 : 1);
