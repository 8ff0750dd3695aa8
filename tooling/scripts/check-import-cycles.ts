/**
 * Fails when the repository's TypeScript has an import cycle. It follows every relative
 * import and re-export (type-only ones too: a cycle of types is still two modules that
 * cannot be understood apart), finds the strongly connected components of that graph
 * (Tarjan) and prints each one. Part of `pnpm run lint`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const ROOT = resolve(import.meta.dirname, "../..");
/** Folders never walked: dependencies, build output, generated code. */
const SKIP = new Set(["node_modules", "dist", ".turbo", ".git", "gen", ".tools"]);

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name) || name.startsWith(".")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (/\.(ts|tsx|mts)$/.test(name) && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** The relative specifiers a file imports or re-exports, statically or dynamically. */
function specifiers(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  return info.importedFiles.map((f) => f.fileName).filter((s) => s.startsWith("."));
}

function resolveSpecifier(from: string, spec: string, known: Set<string>): string | undefined {
  const base = resolve(dirname(from), spec);
  const candidates = [base, `${base}.ts`, `${base}.tsx`, join(base, "index.ts")];
  if (base.endsWith(".js")) candidates.push(base.replace(/\.js$/, ".ts"));
  return candidates.find((c) => known.has(c));
}

/** Strongly connected components with more than one file, or a file importing itself. */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  // Iterative Tarjan: recursion would overflow on a deep import chain.
  for (const start of graph.keys()) {
    if (indices.has(start)) continue;
    const work: { node: string; next: number }[] = [{ node: start, next: 0 }];
    indices.set(start, index);
    low.set(start, index++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { node: string; next: number };
      const edges = graph.get(frame.node) ?? [];
      if (frame.next < edges.length) {
        const to = edges[frame.next++] as string;
        if (!indices.has(to)) {
          indices.set(to, index);
          low.set(to, index++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, next: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node) as number, indices.get(to) as number));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent)
        low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(frame.node) as number));
      if (low.get(frame.node) === indices.get(frame.node)) {
        const component: string[] = [];
        for (;;) {
          const n = stack.pop() as string;
          onStack.delete(n);
          component.push(n);
          if (n === frame.node) break;
        }
        if (component.length > 1 || edges.includes(frame.node)) found.push(component.sort());
      }
    }
  }
  return found;
}

function main(): void {
  const files = ["libs", "services", "tests", "tooling", "deploy"]
    .map((d) => join(ROOT, d))
    .filter((d) => {
      try {
        return statSync(d).isDirectory();
      } catch {
        return false;
      }
    })
    .flatMap((d) => sourceFiles(d));
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const to = specifiers(file)
      .map((s) => resolveSpecifier(file, s, known))
      .filter((t): t is string => t !== undefined);
    graph.set(file, [...new Set(to)]);
  }
  const found = cycles(graph);
  if (found.length === 0) {
    process.stdout.write(`import cycles: none in ${files.length} files\n`);
    return;
  }
  for (const component of found)
    console.error(
      `import cycle (${component.length} files):\n  ${component.map((f) => relative(ROOT, f)).join("\n  ")}`,
    );
  process.stderr.write(`${found.length} import cycle(s) found\n`);
  process.exit(1);
}

main();
