import { existsSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { type K8sObject, renderKustomization } from "./kustomize.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const k8s = `${repo}deploy/k8s`;

/** Every process in services/ (each has a main.ts) and whether it has its own migrations. */
const services = readdirSync(`${repo}services`)
  .filter((name) => existsSync(`${repo}services/${name}/src/main.ts`))
  .map((name) => ({ name, migrates: existsSync(`${repo}services/${name}/src/migrate.ts`) }));

/** The simulator runs only where no real money moves. */
const LOCAL_ONLY = new Set(["sandbox-provider"]);

/** The grace the process gives itself after SIGTERM (stopOnSignals in @gw/runtime). */
const IN_PROCESS_GRACE_S = 25;

/** Secrets the manifests expect to exist before they are applied in production. */
const OUT_OF_BAND_SECRETS = new Set(["gateway-secrets", "gateway-backup-s3"]);

// biome-ignore lint/suspicious/noExplicitAny: rendered YAML is walked by path; the assertions check each shape they read.
type Obj = K8sObject & { spec?: any; data?: Record<string, string> };
const overlays: Record<"local" | "production", { objects: Obj[]; services: typeof services }> = {
  local: { objects: renderKustomization(`${k8s}/overlays/local`), services: services },
  production: {
    objects: renderKustomization(`${k8s}/overlays/production`),
    services: services.filter((s) => !LOCAL_ONLY.has(s.name)),
  },
};

const find = (objects: Obj[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name);
const named = (objects: Obj[], kind: string) => objects.filter((o) => o.kind === kind);

/** The kubernetes-models modules of the API groups the manifests use. */
const MODELS: Record<string, () => Promise<unknown>> = {
  v1: () => import("kubernetes-models/v1"),
  "apps/v1": () => import("kubernetes-models/apps/v1"),
  "batch/v1": () => import("kubernetes-models/batch/v1"),
  "policy/v1": () => import("kubernetes-models/policy/v1"),
  "autoscaling/v2": () => import("kubernetes-models/autoscaling/v2"),
  "networking.k8s.io/v1": () => import("kubernetes-models/networking.k8s.io/v1"),
  "monitoring.coreos.com/v1": () => import("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1"),
};

/** Validates one object against the Kubernetes schema of its apiVersion and kind; false for a custom resource. */
async function validateBuiltIn(obj: Obj): Promise<boolean> {
  const load = MODELS[obj.apiVersion];
  if (!load) return false;
  const models = (await load()) as Record<string, new (data: unknown) => { validate(): void }>;
  const Model = models[obj.kind];
  if (!Model) throw new Error(`kubernetes-models has no ${obj.apiVersion} ${obj.kind}`);
  new Model(obj).validate();
  return true;
}

/**
 * Custom resources have no schema in kubernetes-models: their required fields (per the
 * CloudNativePG and Barman Cloud plugin API references) are checked by hand.
 */
function checkCustomResource(obj: Obj, all: Obj[]): void {
  const key = `${obj.apiVersion} ${obj.kind}`;
  switch (key) {
    case "postgresql.cnpg.io/v1 Cluster": {
      expect(Number.isInteger(obj.spec.instances) && obj.spec.instances >= 1).toBe(true);
      expect(obj.spec.storage.size).toMatch(/^\d+(Mi|Gi|Ti)$/);
      expect(obj.spec.bootstrap.initdb).toMatchObject({ database: "gateway", owner: "gateway" });
      for (const plugin of obj.spec.plugins ?? []) {
        expect(plugin.name).toBe("barman-cloud.cloudnative-pg.io");
        expect(find(all, "ObjectStore", plugin.parameters.barmanObjectName)).toBeDefined();
      }
      return;
    }
    case "postgresql.cnpg.io/v1 ScheduledBackup": {
      // CloudNativePG's schedules have six fields, seconds first.
      expect(obj.spec.schedule.split(" ")).toHaveLength(6);
      const cluster = find(all, "Cluster", obj.spec.cluster.name);
      expect(cluster).toBeDefined();
      expect(obj.spec.method).toBe("plugin");
      expect(
        cluster?.spec.plugins?.some((p: { name: string }) => p.name === obj.spec.pluginConfiguration.name),
      ).toBe(true);
      return;
    }
    case "barmancloud.cnpg.io/v1 ObjectStore": {
      expect(obj.spec.configuration.destinationPath).toMatch(/^s3:\/\//);
      for (const ref of Object.values(obj.spec.configuration.s3Credentials) as {
        name: string;
        key: string;
      }[]) {
        expect(OUT_OF_BAND_SECRETS.has(ref.name) && ref.key.length > 0).toBe(true);
      }
      return;
    }
    default:
      throw new Error(`no schema and no hand check for ${key} ${obj.metadata.name}`);
  }
}

/** CPU in cores and memory in bytes, from Kubernetes quantities. */
function quantity(value: string | number): number {
  const units: Record<string, number> = { m: 1e-3, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };
  const match = /^([\d.]+)([a-zA-Z]*)$/.exec(String(value));
  if (!match?.[1]) throw new Error(`not a quantity: ${value}`);
  const unit = match[2] ?? "";
  if (unit !== "" && !(unit in units)) throw new Error(`unknown unit in ${value}`);
  return Number(match[1]) * (unit ? (units[unit] ?? 1) : 1);
}

/** The environment a container starts with; secrets become placeholders of the right shape. */
// biome-ignore lint/suspicious/noExplicitAny: a container of rendered YAML, as above.
function environment(container: any, objects: Obj[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    const map = find(objects, "ConfigMap", from.configMapRef.name);
    if (!map) throw new Error(`ConfigMap ${from.configMapRef.name} is not in the overlay`);
    Object.assign(env, map.data);
  }
  for (const item of container.env ?? []) {
    if (item.value !== undefined) env[item.name] = item.value;
    else if (item.valueFrom?.secretKeyRef)
      env[item.name] =
        item.name === "DATABASE_URL" ? "postgresql://gateway:pw@gateway-db-rw:5432/gateway" : "s".repeat(40);
    else env[item.name] = "from-field";
  }
  return env;
}

/** Whether a secret named in a manifest will exist: in the overlay, made by the operator, or out of band. */
function secretExists(name: string, objects: Obj[], overlay: string): boolean {
  if (find(objects, "Secret", name)) return true;
  if (named(objects, "Cluster").some((c) => `${c.metadata.name}-app` === name)) return true;
  return overlay === "production" && OUT_OF_BAND_SECRETS.has(name);
}

const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

for (const [overlay, { objects, services: expected }] of Object.entries(overlays) as [
  string,
  { objects: Obj[]; services: typeof services },
][]) {
  describe(`the ${overlay} overlay`, () => {
    it("validates every object against the Kubernetes schemas (custom resources by hand)", async () => {
      expect(objects.length).toBeGreaterThan(20);
      for (const obj of objects) {
        if (!(await validateBuiltIn(obj))) checkCustomResource(obj, objects);
      }
    });

    it("gives every object a unique kind and name in one namespace", () => {
      const namespace = overlay === "local" ? "gateway-dev" : "gateway";
      const keys = objects.map((o) => `${o.kind}/${o.metadata.name}`);
      expect(new Set(keys).size).toBe(keys.length);
      expect(objects.every((o) => o.metadata.namespace === namespace)).toBe(true);
    });

    it("runs exactly the services of services/ as Deployments", () => {
      const deployments = named(objects, "Deployment").map((d) => d.metadata.name);
      expect(deployments.sort()).toEqual(expected.map((s) => s.name).sort());
    });

    for (const service of expected) {
      describe(service.name, () => {
        const deployment = find(objects, "Deployment", service.name)!;
        const pod = deployment?.spec.template;
        const container = pod?.spec.containers[0];

        it("is one container of its own image, started by the image's command", () => {
          expect(pod.spec.containers).toHaveLength(1);
          expect(container.image).toMatch(new RegExp(`/${service.name}(:[\\w.-]+)?$`));
          expect(container.command).toBeUndefined();
        });

        it("gets an environment its config schema accepts, listening on all interfaces", async () => {
          const { configSchema } = (await import(`${repo}services/${service.name}/src/config.ts`)) as {
            configSchema: z.ZodObject;
          };
          const parsed = configSchema.safeParse(environment(container, objects));
          expect(parsed.error?.issues ?? []).toEqual([]);
          expect(parsed.data?.HOST).toBe("0.0.0.0");
        });

        it("probes the port its config listens on: HTTP /livez and /readyz, or grpc.health.v1", async () => {
          const { configSchema } = (await import(`${repo}services/${service.name}/src/config.ts`)) as {
            configSchema: z.ZodObject;
          };
          const config = configSchema.parse(environment(container, objects)) as Record<string, unknown>;
          const ports = Object.fromEntries(
            container.ports.map((p: { name: string; containerPort: number }) => [p.name, p.containerPort]),
          );
          expect(ports.metrics).toBe(config.METRICS_PORT);
          const probes = [container.startupProbe, container.livenessProbe, container.readinessProbe];
          if ("GRPC_PORT" in config) {
            expect(ports.grpc).toBe(config.GRPC_PORT);
            for (const probe of probes) expect(probe.grpc).toEqual({ port: config.GRPC_PORT });
          } else {
            expect(ports.http).toBe(config.PORT ?? config.HTTP_PORT);
            expect(container.livenessProbe.httpGet).toEqual({ path: "/livez", port: "http" });
            expect(container.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
            expect(container.startupProbe.httpGet.port).toBe("http");
          }
        });

        it("requests resources and is limited, requests within limits", () => {
          const { requests, limits } = container.resources;
          for (const r of ["cpu", "memory"]) {
            expect(quantity(requests[r])).toBeGreaterThan(0);
            expect(quantity(requests[r])).toBeLessThanOrEqual(quantity(limits[r]));
          }
        });

        it("has an autoscaler for its Deployment and a disruption budget over its pods", () => {
          const hpa = named(objects, "HorizontalPodAutoscaler").filter(
            (h) => h.spec.scaleTargetRef.kind === "Deployment" && h.spec.scaleTargetRef.name === service.name,
          );
          expect(hpa).toHaveLength(1);
          expect(hpa[0]?.spec.minReplicas).toBeGreaterThanOrEqual(1);
          expect(hpa[0]?.spec.maxReplicas).toBeGreaterThanOrEqual(hpa[0]?.spec.minReplicas);
          // The autoscaler owns the replica count; a fixed one would be reset on every apply.
          expect(deployment.spec.replicas).toBeUndefined();
          const pdbs = named(objects, "PodDisruptionBudget").filter((p) =>
            selects(p.spec.selector.matchLabels, pod.metadata.labels),
          );
          expect(pdbs).toHaveLength(1);
          expect(pdbs[0]?.spec.maxUnavailable).toBe(1);
        });

        it("is reachable through a Service on its named ports", () => {
          const svc = named(objects, "Service").find((s) => selects(s.spec.selector, pod.metadata.labels));
          expect(svc?.metadata.name).toBe(service.name);
          const targets = svc?.spec.ports.map((p: { targetPort: string }) => p.targetPort).sort();
          expect(targets).toEqual(container.ports.map((p: { name: string }) => p.name).sort());
        });

        it("stops within a grace period longer than its own shutdown plus the preStop pause", () => {
          const pause = container.lifecycle?.preStop?.exec?.command;
          expect(pause?.[0]).toBe("sleep");
          const pauseS = Number(pause?.[1]);
          expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThan(IN_PROCESS_GRACE_S + pauseS);
        });

        it("runs as a non-root user without privileges on a read-only root filesystem", () => {
          expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true });
          expect(pod.spec.securityContext.runAsUser).toBeGreaterThan(0);
          expect(container.securityContext).toMatchObject({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ["ALL"] },
          });
        });

        it("takes its secrets by reference, from secrets that will exist", () => {
          const env = new Map(container.env?.map((e: { name: string }) => [e.name, e]) ?? []);
          const secretNames = ["DATABASE_URL", "ADMIN_TOKEN", "CONTROL_TOKEN"];
          for (const name of secretNames) {
            const item = env.get(name) as { value?: string; valueFrom?: { secretKeyRef?: { name: string } } };
            if (!item) continue;
            expect(item.value).toBeUndefined();
            expect(secretExists(item.valueFrom!.secretKeyRef!.name, objects, overlay)).toBe(true);
          }
          if (service.migrates) expect(env.has("DATABASE_URL")).toBe(true);
          if (service.name === "edge") expect(env.has("ADMIN_TOKEN")).toBe(true);
        });
      });
    }

    it("labels Postgres and NATS objects so that they can be applied first", () => {
      const infra = objects.filter(
        (o) => o.apiVersion.includes("cnpg.io") || o.metadata.name.startsWith("gateway-nats"),
      );
      expect(infra.length).toBeGreaterThanOrEqual(6);
      for (const obj of infra) {
        const labels = (obj.metadata.labels ?? {}) as Record<string, string>;
        expect(["database", "messaging"], `${obj.kind}/${obj.metadata.name}`).toContain(
          labels["app.kubernetes.io/component"],
        );
      }
    });

    it("keeps secrets out of the shared ConfigMap", () => {
      for (const map of named(objects, "ConfigMap")) {
        for (const key of Object.keys(map.data ?? {}))
          expect(key).not.toMatch(/TOKEN|SECRET|PASSWORD|DATABASE_URL/);
      }
    });

    it("points every service URL of the config at a Service port that exists", () => {
      const config = find(objects, "ConfigMap", "gateway-config")!;
      const urls = Object.entries(config.data!).filter(
        ([k]) => /_URL$/.test(k) && !/^(PAY|PROVIDER)/.test(k),
      );
      expect(urls.length).toBeGreaterThanOrEqual(6);
      for (const [, value] of urls) {
        const url = new URL(value);
        const svc = find(objects, "Service", url.hostname);
        expect(svc, value).toBeDefined();
        // An empty port is the scheme's default (http://edge: 80).
        const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
        expect(svc?.spec.ports.map((p: { port: number }) => p.port)).toContain(port);
      }
    });

    it("migrates every service with migrations in one Job, each with its own image and command", () => {
      const job = find(objects, "Job", "gateway-migrate")!;
      const spec = job.spec.template.spec;
      expect(spec.restartPolicy).toBe("Never");
      const steps = [...(spec.initContainers ?? []), ...spec.containers];
      expect(steps.map((c: { name: string }) => c.name).sort()).toEqual(
        expected
          .filter((s) => s.migrates)
          .map((s) => s.name)
          .sort(),
      );
      for (const step of steps) {
        expect(step.image).toMatch(new RegExp(`/${step.name}(:[\\w.-]+)?$`));
        expect(step.command).toEqual(["node", "src/migrate.ts"]);
        expect(
          step.env.find((e: { name: string }) => e.name === "DATABASE_URL").valueFrom.secretKeyRef,
        ).toBeDefined();
        expect(step.resources.limits.memory).toBeDefined();
      }
      expect(spec.securityContext.runAsNonRoot).toBe(true);
    });

    it("runs NATS as three JetStream servers with file storage, routed to each other", () => {
      const nats = find(objects, "StatefulSet", "gateway-nats")!;
      expect(nats.spec.replicas).toBe(3);
      const conf = find(objects, "ConfigMap", "gateway-nats-config")!.data!["nats.conf"]!;
      const dataMount = nats.spec.template.spec.containers[0].volumeMounts.find(
        (m: { name: string }) => m.name === "data",
      );
      expect(conf).toContain(`store_dir: ${dataMount.mountPath}`);
      expect(nats.spec.volumeClaimTemplates[0].metadata.name).toBe("data");
      for (const i of [0, 1, 2])
        expect(conf).toContain(`nats://gateway-nats-${i}.${nats.spec.serviceName}:6222`);
      expect(find(objects, "Service", nats.spec.serviceName)?.spec.clusterIP).toBe("None");
      const natsUrl = new URL(find(objects, "ConfigMap", "gateway-config")!.data!.NATS_URL!);
      expect(find(objects, "Service", natsUrl.hostname)).toBeDefined();
    });

    it("reads DATABASE_URL from the secret the CloudNativePG cluster creates", () => {
      const clusters = named(objects, "Cluster");
      expect(clusters).toHaveLength(1);
      const refs = objects
        .flatMap((o) => {
          const spec = o.spec?.template?.spec;
          return spec ? [...(spec.initContainers ?? []), ...spec.containers] : [];
        })
        .flatMap((c) => c.env ?? [])
        .filter((e: { name: string }) => e.name === "DATABASE_URL");
      expect(refs.length).toBeGreaterThan(0);
      for (const ref of refs) {
        expect(ref.valueFrom.secretKeyRef).toEqual({ name: `${clusters[0]?.metadata.name}-app`, key: "uri" });
      }
    });
  });
}

describe("the production overlay's specifics", () => {
  const { objects } = overlays.production;

  it("contains no Secret: every secret is created out of band or by the operator", () => {
    expect(named(objects, "Secret")).toEqual([]);
  });

  it("pins every gateway image to a registry and a release tag", () => {
    const images = objects.flatMap((o) => {
      const spec = o.spec?.template?.spec;
      return spec ? [...(spec.initContainers ?? []), ...spec.containers].map((c) => c.image as string) : [];
    });
    for (const image of images.filter((i) => !i.startsWith("nats:"))) {
      expect(image).toMatch(/^[\w.-]+\.[a-z]+\/[\w/-]+:\d+\.\d+\.\d+$/);
    }
  });

  it("archives Postgres WAL and takes daily base backups", () => {
    const cluster = find(objects, "Cluster", "gateway-db")!;
    expect(cluster.spec.instances).toBe(3);
    expect(cluster.spec.plugins[0].isWALArchiver).toBe(true);
    expect(named(objects, "ScheduledBackup")).toHaveLength(1);
  });

  it("does not let webhooks call private addresses", () => {
    const webhooks = find(objects, "Deployment", "webhooks")!;
    const env = webhooks.spec.template.spec.containers[0].env ?? [];
    expect(env.find((e: { name: string }) => e.name === "WEBHOOK_ALLOW_PRIVATE_TARGETS")).toBeUndefined();
  });
});
