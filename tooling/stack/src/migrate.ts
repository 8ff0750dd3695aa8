// `pnpm migrate`: applies every service's migrations (each service's own `src/migrate.ts`).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ensurePostgres } from "./infra.ts";
import { DATA_DIR } from "./local.ts";
import { SERVICES } from "./services.ts";
import { REPO_ROOT } from "./stack.ts";

const postgres = await ensurePostgres(DATA_DIR, process.env.DATABASE_URL);
let failed = 0;
for (const { name } of SERVICES) {
  const script = join(REPO_ROOT, "services", name, "src", "migrate.ts");
  if (!existsSync(script)) continue;
  const run = spawnSync(process.execPath, [script], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: postgres.url },
    stdio: "inherit",
  });
  const ok = run.status === 0;
  if (!ok) failed++;
  process.stdout.write(`[migrate] ${name}: ${ok ? "ok" : `failed (exit ${run.status ?? run.signal})`}\n`);
}
await postgres.stop();
process.exit(failed === 0 ? 0 : 1);
