import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The metric names the code registers, and the names a PromQL expression reads: what the
 * dashboard and the alert rules may use (deploy/src/dashboard.unit.test.ts, cluster.unit.test.ts).
 */

const repo = fileURLToPath(new URL("../../", import.meta.url));

/** Every `.ts` file under a directory, skipping dependencies and tests. */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "gen") continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (name.endsWith(".ts") && !name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

/** The metric names our code registers (`name: "..."` next to prom-client constructors). */
export const definedMetrics = new Set<string>();
for (const file of [
  ...sources(join(repo, "libs")),
  ...sources(join(repo, "services")),
  ...sources(join(repo, "tooling")),
]) {
  const text = readFileSync(file, "utf8");
  if (!text.includes("prom-client")) continue;
  for (const m of text.matchAll(/name: "([a-z_:][a-z0-9_:]*)"/g)) definedMetrics.add(m[1] as string);
}

// Exported by others: kube-state-metrics' restart count of a pod's containers.
definedMetrics.add("kube_pod_container_status_restarts_total");

/** Metric names a PromQL expression reads (histogram series map to their metric). */
export function metricsOf(expr: string): string[] {
  const bare = expr
    .replace(/\b(by|without)\s*\([^)]*\)/g, "")
    .replace(/\{[^}]*\}/g, "{}")
    .replace(/"[^"]*"/g, "");
  const names = [...bare.matchAll(/\b([a-z_][a-z0-9_]*)\s*(?=[{[)])/g)].map((m) => m[1] as string);
  return names.map((n) => n.replace(/_(bucket|count|sum)$/, ""));
}
