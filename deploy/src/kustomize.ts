import { readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";

/** One Kubernetes object as plain data. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

interface Kustomization {
  resources?: string[];
  namespace?: string;
  images?: { name: string; newName?: string; newTag?: string }[];
  patches?: { path: string; target?: { kind?: string; name?: string } }[];
}

/**
 * The fields of kustomization.yaml this renderer understands. Anything else is refused
 * rather than ignored, so that what the tests validate is what `kubectl apply -k` applies.
 */
const KNOWN_FIELDS = new Set(["apiVersion", "kind", "resources", "namespace", "images", "patches"]);

/**
 * Renders a kustomization directory the way `kubectl kustomize` does, for the subset the
 * manifests in deploy/k8s use: resources (files and directories), namespace, images
 * (newName/newTag) and strategic-merge patches (by the patch's own kind and name, or by a
 * target kind/name). The machine has no kustomize binary; this lets the tests validate
 * the rendered objects of each overlay.
 */
export function renderKustomization(dir: string): K8sObject[] {
  const file = join(dir, "kustomization.yaml");
  const k = readYaml(file)[0] as Kustomization & Record<string, unknown>;
  for (const field of Object.keys(k)) {
    if (!KNOWN_FIELDS.has(field)) throw new Error(`${file}: unsupported field ${field}`);
  }
  let objects: K8sObject[] = [];
  for (const entry of k.resources ?? []) {
    const path = resolve(dir, entry);
    objects.push(...(statSync(path).isDirectory() ? renderKustomization(path) : readObjects(path)));
  }
  for (const patch of k.patches ?? []) {
    const path = resolve(dir, patch.path);
    for (const doc of readObjects(path)) {
      const target = patch.target ?? { kind: doc.kind, name: doc.metadata.name };
      let matched = 0;
      objects = objects.map((obj) => {
        if (target.kind !== undefined && obj.kind !== target.kind) return obj;
        if (target.name !== undefined && obj.metadata.name !== target.name) return obj;
        matched += 1;
        // A targeted patch applies to every match, whatever name the patch itself carries.
        const body = patch.target ? { ...doc, metadata: { ...doc.metadata, name: obj.metadata.name } } : doc;
        return mergePatch(obj, body) as K8sObject;
      });
      if (matched === 0)
        throw new Error(`${path}: the patch of ${doc.kind}/${doc.metadata.name} matches nothing`);
    }
  }
  if (k.namespace !== undefined) {
    const namespace = k.namespace;
    objects = objects.map((obj) => ({ ...obj, metadata: { ...obj.metadata, namespace } }));
  }
  for (const image of k.images ?? []) {
    objects = objects.map((obj) => setImage(obj, image));
  }
  return objects;
}

function readYaml(path: string): unknown[] {
  return parseAllDocuments(readFileSync(path, "utf8")).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors[0]?.message}`);
    return doc.toJS();
  });
}

function readObjects(path: string): K8sObject[] {
  return readYaml(path)
    .filter((doc) => doc !== null)
    .map((doc) => {
      const obj = doc as K8sObject;
      if (!obj.apiVersion || !obj.kind || !obj.metadata?.name) {
        throw new Error(`${path}: every document needs apiVersion, kind and metadata.name`);
      }
      return obj;
    });
}

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const isNamedList = (v: unknown): v is { name: string }[] =>
  Array.isArray(v) && v.length > 0 && v.every((item) => isMap(item) && typeof item.name === "string");

/**
 * A strategic merge patch as kustomize applies it to the fields used here: maps merge,
 * `null` deletes a key, lists of named items (containers, env, volumes) merge by name,
 * and every other list is replaced. (Kustomize merges a custom resource's lists as JSON
 * merge patches do, by replacing them: the patches here never put a list into one.)
 */
export function mergePatch(base: unknown, patch: unknown): unknown {
  if (isMap(base) && isMap(patch)) {
    const out: Record<string, unknown> = { ...base };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete out[key];
      else out[key] = key in base ? mergePatch(base[key], value) : value;
    }
    return out;
  }
  if (isNamedList(base) && isNamedList(patch)) {
    const out = base.map((item) => {
      const change = patch.find((p) => p.name === item.name);
      return change ? mergePatch(item, change) : item;
    });
    for (const item of patch) if (!base.some((b) => b.name === item.name)) out.push(item);
    return out;
  }
  return patch;
}

/** The image of every container and init container named `image.name` (any tag), renamed and retagged. */
function setImage(obj: K8sObject, image: { name: string; newName?: string; newTag?: string }): K8sObject {
  const podSpec = (obj.spec as { template?: { spec?: Record<string, unknown> } } | undefined)?.template?.spec;
  if (!podSpec) return obj;
  const retag = (containers: unknown) =>
    Array.isArray(containers)
      ? containers.map((c: { image?: string }) => {
          if (!c.image) return c;
          const [repo, tag] = splitImage(c.image);
          if (repo !== image.name) return c;
          const newTag = image.newTag ?? tag;
          return { ...c, image: `${image.newName ?? repo}${newTag ? `:${newTag}` : ""}` };
        })
      : containers;
  const spec: Record<string, unknown> = { ...podSpec, containers: retag(podSpec.containers) };
  if (podSpec.initContainers) spec.initContainers = retag(podSpec.initContainers);
  const template = { ...(obj.spec as { template: object }).template, spec };
  return { ...obj, spec: { ...(obj.spec as object), template } };
}

/** `registry:5000/a/b:tag` → [`registry:5000/a/b`, `tag`]; a port is not a tag. */
function splitImage(ref: string): [string, string | undefined] {
  const slash = ref.lastIndexOf("/");
  const colon = ref.lastIndexOf(":");
  return colon > slash ? [ref.slice(0, colon), ref.slice(colon + 1)] : [ref, undefined];
}
