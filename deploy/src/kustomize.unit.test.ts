import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { mergePatch, renderKustomization } from "./kustomize.ts";

const scratch = mkdtempSync(join(tmpdir(), "gw-kustomize-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Writes a small kustomization tree and returns the directory of `overlay`. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(scratch, "t-"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return join(root, "overlay");
}

const deployment = (name: string) => `apiVersion: apps/v1
kind: Deployment
metadata: { name: ${name} }
spec:
  template:
    spec:
      containers:
        - name: ${name}
          image: gateway/${name}
          env:
            - { name: A, value: "1" }
            - { name: B, value: "2" }
`;

interface Rendered {
  metadata: { namespace?: string };
  spec: {
    revisionHistoryLimit?: number;
    template: { spec: { containers: { image: string; env?: unknown }[] } };
  };
}

describe("mergePatch", () => {
  it("merges maps, deletes keys set to null and merges named lists by name", () => {
    const merged = mergePatch(
      {
        a: 1,
        b: { c: 2, d: 3 },
        list: [
          { name: "x", v: 1 },
          { name: "y", v: 2 },
        ],
      },
      {
        b: { d: null, e: 4 },
        list: [
          { name: "y", v: 5 },
          { name: "z", v: 6 },
        ],
      },
    );
    expect(merged).toEqual({
      a: 1,
      b: { c: 2, e: 4 },
      list: [
        { name: "x", v: 1 },
        { name: "y", v: 5 },
        { name: "z", v: 6 },
      ],
    });
  });

  it("replaces lists whose items have no name", () => {
    expect(mergePatch({ args: ["a", "b"] }, { args: ["c"] })).toEqual({ args: ["c"] });
  });
});

describe("renderKustomization", () => {
  it("renders resources of nested directories with a namespace, images and patches", () => {
    const dir = tree({
      "base/kustomization.yaml": "resources: [app.yaml]\n",
      "base/app.yaml": `${deployment("one")}---\n${deployment("two")}`,
      "overlay/kustomization.yaml": `namespace: ns
resources: [../base]
images:
  - { name: gateway/one, newName: reg.example.com/one, newTag: "1.2.3" }
patches:
  - path: env.yaml
  - path: all.yaml
    target: { kind: Deployment }
`,
      "overlay/env.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: { name: two }
spec:
  template:
    spec:
      containers:
        - name: two
          env:
            - { name: B, value: "changed" }
`,
      "overlay/all.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: { name: ignored }
spec:
  revisionHistoryLimit: 3
`,
    });
    const [one, two] = renderKustomization(dir) as unknown as Rendered[];
    expect(one?.metadata.namespace).toBe("ns");
    expect(one?.spec.template.spec.containers[0]?.image).toBe("reg.example.com/one:1.2.3");
    expect(two?.spec.template.spec.containers[0]?.image).toBe("gateway/two");
    expect(two?.spec.template.spec.containers[0]?.env).toEqual([
      { name: "A", value: "1" },
      { name: "B", value: "changed" },
    ]);
    expect([one?.spec.revisionHistoryLimit, two?.spec.revisionHistoryLimit]).toEqual([3, 3]);
  });

  it("refuses a kustomization field it does not implement", () => {
    const dir = tree({
      "overlay/kustomization.yaml": "resources: []\nnamePrefix: x-\n",
    });
    expect(() => renderKustomization(dir)).toThrow(/unsupported field namePrefix/);
  });

  it("refuses a patch that matches no object", () => {
    const dir = tree({
      "overlay/kustomization.yaml": "resources: [app.yaml]\npatches:\n  - path: p.yaml\n",
      "overlay/app.yaml": deployment("one"),
      "overlay/p.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: other }\nspec: {}\n",
    });
    expect(() => renderKustomization(dir)).toThrow(/matches nothing/);
  });
});
