import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { definedMetrics as defined, metricsOf } from "./metric-names.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const dashboard = JSON.parse(readFileSync(join(repo, "deploy/dashboards/gateway.json"), "utf8")) as {
  uid: string;
  panels: { type: string; title: string; targets?: { expr: string }[]; gridPos: { w: number; x: number } }[];
};

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
