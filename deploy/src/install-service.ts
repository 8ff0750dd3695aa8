import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/**
 * The production-only install of one service, as the container build runs it: the
 * service and the workspace packages it depends on, each with its own source, and only
 * their `dependencies` (no devDependencies, no other service) in one pnpm virtual store.
 *
 * Why not `pnpm deploy`: it copies workspace packages into `node_modules`, and Node
 * refuses to strip types from files under `node_modules`
 * (ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING). Our libraries are TypeScript without a
 * build step, so they must stay outside `node_modules` as in the repository, linked in
 * by pnpm.
 *
 * `workspace` is a copy of the repository without any node_modules (the image's build
 * stage, or a scratch copy in the tests); pnpm's store must already hold every package
 * (`pnpm fetch --prod` in the image), since the install runs offline. The result in
 * `out` keeps the repository's layout: run the service from `out/services/<name>`.
 */
export function installService(workspace: string, service: string, out: string): void {
  const root = resolve(workspace);
  const filter = `@gw/${service}...`;
  const pnpm = (args: string[]) =>
    execFileSync("pnpm", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (!existsSync(join(root, "services", service, "package.json"))) {
    throw new Error(`no service ${service} in ${root}/services`);
  }
  // Whatever an earlier install linked would be copied into the image as well.
  if (existsSync(join(root, "node_modules"))) {
    throw new Error(`${root}/node_modules exists: install into a copy of the repository without it`);
  }
  pnpm([
    "install",
    "--offline",
    "--frozen-lockfile",
    "--prod",
    "--filter-prod",
    filter,
    "--reporter=append-only",
  ]);
  const projects = JSON.parse(pnpm(["--filter-prod", filter, "list", "--depth", "-1", "--json"])) as {
    name: string;
    path: string;
  }[];

  mkdirSync(out, { recursive: true });
  // Symlinks stay symlinks: pnpm's links are relative, so the tree works wherever it lands.
  const copy = (from: string) =>
    cpSync(join(root, from), join(out, from), { recursive: true, verbatimSymlinks: true });
  copy("package.json");
  copy("node_modules");
  for (const project of projects) {
    const rel = relative(root, project.path);
    if (rel === "" || rel.startsWith("..")) throw new Error(`unexpected project path ${project.path}`);
    mkdirSync(join(out, dirname(rel)), { recursive: true });
    copy(rel);
  }
}

// `node deploy/src/install-service.ts <service> <out>` from the workspace root (the Dockerfile).
if (import.meta.main) {
  const [service, out] = process.argv.slice(2);
  if (!service || !out) {
    console.error("usage: node deploy/src/install-service.ts <service> <out dir>");
    process.exit(2);
  }
  installService(process.cwd(), service, out);
}
