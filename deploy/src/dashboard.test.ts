import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const dashboard = JSON.parse(readFileSync(join(repo, "deploy/dashboards/gateway.json"), "utf8")) as {
  uid: string;
  panels: { type: string; title: string; targets?: { expr: string }[]; gridPos: { w: number; x: number } }[];
};

/** Every `.ts` file under a directory, skipping dependencies. */
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
const defined = new Set<string>();
for (const file of [
  ...sources(join(repo, "libs")),
  ...sources(join(repo, "services")),
  ...sources(join(repo, "tooling")),
]) {
  const text = readFileSync(file, "utf8");
  if (!text.includes("prom-client")) continue;
  for (const m of text.matchAll(/name: "([a-z_:][a-z0-9_:]*)"/g)) defined.add(m[1] as string);
}

// Exported by others: kube-state-metrics' restart count of a pod's containers.
defined.add("kube_pod_container_status_restarts_total");

/** Metric names a PromQL expression reads (histogram series map to their metric). */
function metricsOf(expr: string): string[] {
  const bare = expr
    .replace(/\b(by|without)\s*\([^)]*\)/g, "")
    .replace(/\{[^}]*\}/g, "{}")
    .replace(/"[^"]*"/g, "");
  const names = [...bare.matchAll(/\b([a-z_][a-z0-9_]*)\s*(?=[{[)])/g)].map((m) => m[1] as string);
  return names.map((n) => n.replace(/_(bucket|count|sum)$/, ""));
}

describe("the Grafana dashboard in deploy/dashboards", () => {
  const targets = dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })),
  );

  it("only charts metrics the services register", () => {
    expect(targets.length).toBeGreaterThan(10);
    expect(defined.has("rpc_server_duration_seconds")).toBe(true);
    for (const { panel, expr } of targets) {
      const names = metricsOf(expr);
      expect(names.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      for (const name of names)
        expect(defined.has(name), `${panel} reads ${name}, which nothing registers`).toBe(true);
    }
  });

  it("charts rate, errors and duration per route and per RPC and each business figure", () => {
    const all = targets.map((t) => t.expr).join("\n");
    for (const metric of [
      "http_server_duration_seconds",
      "rpc_server_duration_seconds",
      "rpc_client_duration_seconds",
      "operations_creates_total",
      "domain_events_total",
      "matching_pool_open_payouts",
      "matching_pool_free_amount",
      "outbox_unpublished",
      "webhook_delivery_lag_seconds",
      "webhook_deliveries_total",
      "receipt_verdicts_total",
      "dead_letters_open",
      "events_dead_lettered_total",
    ])
      expect(all, metric).toContain(metric);
  });

  it("keeps every panel inside the 24-column grid", () => {
    for (const p of dashboard.panels) expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
  });
});
