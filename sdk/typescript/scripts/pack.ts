// `npm pack` / `pnpm pack` / `npm publish` of @gw/sdk. In the workspace the package is
// its TypeScript source (exports → src/index.ts, versions from the catalog); what is
// published is compiled JavaScript with types. Both package managers read package.json
// AFTER `prepack` and run `postpack` after the tarball is written, so:
//   node scripts/pack.ts prepack    compiles src/ to dist/, copies the repository's LICENSE,
//                                   keeps package.json aside as .package.json.workspace
//                                   and writes the published manifest in its place
//   node scripts/pack.ts postpack   puts the workspace manifest back, removes the LICENSE copy
// The published manifest: exports and types point at dist/, every `catalog:` range is the
// catalog's version, no scripts, no devDependencies (the workspace-only @gw/* packages
// are there only to generate the types).
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = (path: string) => fileURLToPath(new URL(`../${path}`, import.meta.url));
const MANIFEST = here("package.json");
const KEPT = here(".package.json.workspace");
const WORKSPACE = here("../../pnpm-workspace.yaml");

type Manifest = Record<string, unknown> & {
  dependencies?: Record<string, string>;
  publishConfig?: Record<string, unknown>;
};

/** The `catalog:` block of pnpm-workspace.yaml as name → version. */
export function catalogOf(yaml: string): Map<string, string> {
  const catalog = new Map<string, string>();
  let inside = false;
  for (const line of yaml.split("\n")) {
    if (/^catalog:\s*$/.test(line)) {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
    if (!line.startsWith(" ")) break;
    const m = line.trim().match(/^"?([^":]+)"?:\s*"?([^"\s]+)"?$/);
    if (m?.[1] && m[2]) catalog.set(m[1], m[2]);
  }
  return catalog;
}

/** The manifest npm users get, from the workspace's. */
export function publishedManifest(workspace: Manifest, catalog: Map<string, string>): Manifest {
  const { scripts: _s, devDependencies: _d, publishConfig = {}, ...rest } = workspace;
  const { exports, ...publishRest } = publishConfig;
  const dependencies: Record<string, string> = {};
  for (const [name, range] of Object.entries(workspace.dependencies ?? {})) {
    if (range.startsWith("workspace:")) throw new Error(`${name}: a workspace package cannot be published`);
    const version = range === "catalog:" ? catalog.get(name) : range;
    if (!version) throw new Error(`${name}: not in the catalog of pnpm-workspace.yaml`);
    // The catalog pins exact versions for the workspace; a merchant gets compatible updates.
    dependencies[name] = /^\d/.test(version) ? `^${version}` : version;
  }
  return {
    ...rest,
    main: "./dist/index.js",
    types: "./dist/index.d.ts",
    exports,
    dependencies,
    ...(Object.keys(publishRest).length > 0 ? { publishConfig: publishRest } : {}),
  };
}

const step = process.argv[2];
if (step === "prepack") {
  if (existsSync(KEPT))
    throw new Error(`${KEPT} exists: a pack stopped half-way; restore it as package.json`);
  const workspace = JSON.parse(readFileSync(MANIFEST, "utf8")) as Manifest;
  rmSync(here("dist"), { recursive: true, force: true });
  execFileSync("tsc", ["-p", "tsconfig.build.json"], { cwd: here("."), stdio: "inherit" });
  const published = publishedManifest(workspace, catalogOf(readFileSync(WORKSPACE, "utf8")));
  copyFileSync(here("../../LICENSE"), here("LICENSE"));
  renameSync(MANIFEST, KEPT);
  writeFileSync(MANIFEST, `${JSON.stringify(published, null, 2)}\n`);
} else if (step === "postpack") {
  if (existsSync(KEPT)) renameSync(KEPT, MANIFEST);
  rmSync(here("LICENSE"), { force: true });
} else if (import.meta.main) {
  console.error("usage: node scripts/pack.ts prepack | postpack");
  process.exit(2);
}
