import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type K8sObject, renderKustomization } from "./kustomize.ts";
import { definedMetrics, metricsOf } from "./metric-names.ts";

// The cluster locked down and watched (issue 30): NetworkPolicies evaluated as a CNI
// would for the paths each service needs (and some it must not have), PodMonitors over
// every metrics port, and the PrometheusRule's alerts against the metrics the code
// registers and the runbook in docs/operations.md. Schema validation of these objects is
// in manifests.unit.test.ts with the rest.

const repo = fileURLToPath(new URL("../../", import.meta.url));
const k8s = `${repo}deploy/k8s`;
const operationsDoc = readFileSync(`${repo}docs/operations.md`, "utf8");

// biome-ignore lint/suspicious/noExplicitAny: rendered YAML, walked by path.
type Obj = K8sObject & { spec?: any };
type Labels = Record<string, string>;

interface Peer {
  podSelector?: { matchLabels?: Labels };
  namespaceSelector?: { matchLabels?: Labels };
}
interface Rule {
  from?: Peer[];
  ports?: { protocol?: string; port: number | string }[];
}

const matches = (selector: { matchLabels?: Labels } | undefined, labels: Labels) =>
  Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);

/** A pod as a policy sees it: its labels and its named container ports. */
interface Pod {
  labels: Labels;
  ports: Record<string, number>;
}

/** Where a connection comes from: a pod of this namespace, or any pod of another. */
type Source = { pod: Labels } | { namespace: string };

const INGRESS_NS = "ingress-nginx";
const MONITORING_NS = "monitoring";

/** Whether the namespace's policies let `source` open a TCP connection to `port` of `pod`. */
function allowed(policies: Obj[], namespace: string, source: Source, pod: Pod, port: number): boolean {
  const selecting = policies.filter((p) => matches(p.spec.podSelector, pod.labels));
  // A pod no policy selects takes everything; the default-deny selects every pod.
  if (selecting.length === 0) return true;
  return selecting.some((p) =>
    ((p.spec.ingress ?? []) as Rule[]).some((rule) => {
      const peerOk = (rule.from ?? [{}]).some((peer) => {
        if (peer.namespaceSelector) {
          const ns = "namespace" in source ? source.namespace : namespace;
          if (!matches(peer.namespaceSelector, { "kubernetes.io/metadata.name": ns })) return false;
          return peer.podSelector ? "pod" in source && matches(peer.podSelector, source.pod) : true;
        }
        if (!("pod" in source)) return Object.keys(peer).length === 0;
        return peer.podSelector ? matches(peer.podSelector, source.pod) : true;
      });
      const portOk =
        rule.ports === undefined ||
        rule.ports.some((p) => (typeof p.port === "number" ? p.port : pod.ports[p.port]) === port);
      return peerOk && portOk;
    }),
  );
}

function podOf(obj: Obj): Pod {
  const ports: Record<string, number> = {};
  for (const c of obj.spec.template.spec.containers)
    for (const p of c.ports ?? []) if (p.name) ports[p.name] = p.containerPort;
  return { labels: obj.spec.template.metadata.labels, ports };
}

/** The gRPC callers of each gRPC service (the clients each service's code creates). */
const GRPC_CALLERS: Record<string, string[]> = {
  operations: ["edge", "checkout"],
  matching: ["edge", "operations"],
  ledger: ["edge", "operations"],
  receipts: ["edge", "operations"],
  webhooks: ["edge"],
};
/** The processes that publish or consume events. */
const NATS_CLIENTS = ["edge", "operations", "matching", "ledger", "receipts", "webhooks"];
const PUBLIC = ["edge", "checkout", "backoffice"];

/** The alerts docs/operations.md names, and the one each must exist for. */
const ALERTS = [
  "GatewayProcessRestarting",
  "GatewayDeadLettersOpen",
  "GatewayOutboxLag",
  "GatewayProviderOutcomeUnresolved",
  "GatewayProviderFactsOpen",
  "GatewayManualCheckWaiting",
  "GatewayPayoutAwaitingOperator",
  "GatewayWebhookFailures",
  "GatewayWebhooksRetrying",
];

for (const overlay of ["local", "production"] as const) {
  const objects = renderKustomization(`${k8s}/overlays/${overlay}`) as Obj[];
  const namespace = objects.find((o) => o.kind === "Deployment")?.metadata.namespace ?? "";
  const policies = objects.filter((o) => o.kind === "NetworkPolicy");
  const deployments = objects.filter((o) => o.kind === "Deployment");
  const byName = (name: string) => podOf(deployments.find((d) => d.metadata.name === name)!);
  const pod = (name: string) => ({ pod: byName(name).labels });
  const statefulPods = objects
    .filter((o) => o.kind === "StatefulSet")
    .map((s) => ({ name: s.metadata.name, ...podOf(s) }));
  const postgres: Pod = { labels: { "cnpg.io/cluster": "gateway-db" }, ports: {} };
  const migrate = objects.find((o) => o.kind === "Job" && o.metadata.name === "gateway-migrate")!;

  describe(`the ${overlay} overlay's network policies`, () => {
    it("deny every inbound connection by default", () => {
      const deny = policies.filter(
        (p) => Object.keys(p.spec.podSelector ?? {}).length === 0 && p.spec.ingress === undefined,
      );
      expect(deny.map((p) => p.spec.policyTypes)).toEqual([["Ingress"]]);
      // A pod of the namespace that no allow names is unreachable.
      expect(allowed(policies, namespace, pod("edge"), { labels: { app: "other" }, ports: {} }, 80)).toBe(
        false,
      );
    });

    it("select every Deployment's and StatefulSet's pods, and Postgres's, with an allow of their own", () => {
      const allows = policies.filter((p) => p.spec.ingress !== undefined);
      for (const d of [...deployments.map((d) => ({ name: d.metadata.name, ...podOf(d) })), ...statefulPods])
        expect(
          allows.some(
            (p) =>
              Object.keys(p.spec.podSelector.matchLabels ?? {}).length > 0 &&
              matches(p.spec.podSelector, d.labels),
          ),
          d.name,
        ).toBe(true);
      expect(
        allows.some((p) => matches(p.spec.podSelector, postgres.labels) && p.spec.podSelector.matchLabels),
      ).toBe(true);
    });

    it("let the ingress reach the edge, checkout and the back office, and nothing else", () => {
      for (const d of deployments) {
        const target = podOf(d);
        const open = allowed(
          policies,
          namespace,
          { namespace: INGRESS_NS },
          target,
          target.ports.http ?? target.ports.grpc ?? 0,
        );
        expect(open, d.metadata.name).toBe(PUBLIC.includes(d.metadata.name));
      }
      expect(allowed(policies, namespace, { namespace: INGRESS_NS }, postgres, 5432)).toBe(false);
    });

    it("let each gRPC service be called by its callers only", () => {
      for (const [service, callers] of Object.entries(GRPC_CALLERS)) {
        const target = byName(service);
        for (const d of deployments) {
          const name = d.metadata.name;
          const open = allowed(policies, namespace, pod(name), target, target.ports.grpc!);
          expect(open, `${name} → ${service}`).toBe(callers.includes(name));
        }
      }
      // The back office reaches the gateway through the edge's admin API only.
      expect(
        allowed(policies, namespace, pod("backoffice"), byName("edge"), byName("edge").ports.http!),
      ).toBe(true);
    });

    it("let Postgres be reached by the processes with a DATABASE_URL and the migration Job, NATS by its clients", () => {
      for (const d of deployments) {
        const usesDb = d.spec.template.spec.containers.some((c: { env?: { name: string }[] }) =>
          (c.env ?? []).some((e) => e.name === "DATABASE_URL"),
        );
        expect(allowed(policies, namespace, pod(d.metadata.name), postgres, 5432), d.metadata.name).toBe(
          usesDb,
        );
      }
      expect(
        allowed(policies, namespace, { pod: migrate.spec.template.metadata.labels }, postgres, 5432),
      ).toBe(true);
      const nats = statefulPods.find((s) => s.name === "gateway-nats")!;
      for (const d of deployments)
        expect(allowed(policies, namespace, pod(d.metadata.name), nats, 4222), d.metadata.name).toBe(
          NATS_CLIENTS.includes(d.metadata.name),
        );
      // The NATS servers route to each other.
      expect(allowed(policies, namespace, { pod: nats.labels }, nats, 6222)).toBe(true);
    });

    it("let the monitoring namespace scrape every metrics port, and only that port", () => {
      for (const d of deployments) {
        const target = podOf(d);
        expect(
          allowed(policies, namespace, { namespace: MONITORING_NS }, target, target.ports.metrics!),
          d.metadata.name,
        ).toBe(true);
        const main = target.ports.http ?? target.ports.grpc!;
        expect(
          allowed(policies, namespace, { namespace: MONITORING_NS }, target, main),
          d.metadata.name,
        ).toBe(false);
      }
      expect(allowed(policies, namespace, { namespace: MONITORING_NS }, postgres, 9187)).toBe(true);
    });
  });

  describe(`the ${overlay} overlay's monitoring`, () => {
    const monitors = objects.filter((o) => o.kind === "PodMonitor");

    it("scrapes every metrics port of every Deployment with a PodMonitor", () => {
      for (const d of deployments) {
        const target = podOf(d);
        expect(target.ports.metrics, d.metadata.name).toBeDefined();
        const by = monitors.filter(
          (m) =>
            matches(m.spec.selector, target.labels) &&
            m.spec.podMetricsEndpoints.some((e: { port: string }) => e.port === "metrics"),
        );
        expect(by.length, d.metadata.name).toBe(1);
      }
      expect(monitors.some((m) => matches(m.spec.selector, postgres.labels))).toBe(true);
    });

    const rules = objects
      .filter((o) => o.kind === "PrometheusRule")
      .flatMap((r) => r.spec.groups.flatMap((g: { rules: unknown[] }) => g.rules)) as {
      alert: string;
      expr: string;
      annotations: Record<string, string>;
    }[];

    it("alerts on restarts, dead letters, outbox lag, unresolved provider outcomes, manual checks waiting, payouts awaiting an operator and webhook failures", () => {
      expect(rules.map((r) => r.alert).sort()).toEqual([...ALERTS].sort());
    });

    it("reads only metrics the code registers", () => {
      for (const rule of rules) {
        const names = metricsOf(rule.expr);
        expect(names.length, rule.alert).toBeGreaterThan(0);
        for (const name of names) expect(definedMetrics.has(name), `${rule.alert} reads ${name}`).toBe(true);
      }
    });

    it("gives every alert a runbook line in docs/operations.md", () => {
      for (const rule of rules) {
        expect(rule.annotations.runbook).toBe(`docs/operations.md#alerts: ${rule.alert}`);
        expect(operationsDoc, rule.alert).toMatch(new RegExp(`^\\| \`${rule.alert}\` \\|`, "m"));
      }
    });
  });
}
