/**
 * Fails when code imports another package's files by path (`@gw/<package>/src/...`, or a
 * relative path into another package of the workspace) instead of what that package
 * exports: its entry or an `exports` subpath such as `@gw/operations/testing`. Test code
 * is held to it too; test helpers shared across packages live in `@gw/testkit`
 * (CONTRIBUTING.md, "Tests"). Part of `pnpm run lint`.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, posix, resolve } from "node:path";
import ts from "typescript";

const ROOT = resolve(import.meta.dirname, "../..");

/** The package folders of the workspace that others may only enter by their exports. */
const PACKAGE = /^(libs|services|tooling|sdk)\/[^/]+\/|^(tests|deploy)\//;

/** The package folder a repository path belongs to ("services/edge/"), if any. */
function packageOf(path: string): string | undefined {
  return PACKAGE.exec(path)?.[0];
}

/** The module specifiers `text` imports or re-exports (`import()` included), with their lines. */
function specifiers(fileName: string, text: string): { spec: string; line: number }[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: { spec: string; line: number }[] = [];
  const add = (node: ts.Expression) => {
    if (ts.isStringLiteralLike(node))
      found.push({
        spec: node.text,
        line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1,
      });
  };
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier)
      add(node.moduleSpecifier);
    else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0]
    )
      add(node.arguments[0]);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** What in `text` (the file at repository path `fileName`) reaches into another package. */
export function deepImports(fileName: string, text: string): string[] {
  const own = packageOf(fileName);
  const found: string[] = [];
  for (const { spec, line } of specifiers(fileName, text)) {
    if (/^@gw\/[^/]+\/src(\/|$)/.test(spec)) found.push(`${fileName}:${line}: imports "${spec}"`);
    else if (spec.startsWith(".")) {
      const target = posix.normalize(posix.join(posix.dirname(fileName), spec));
      const theirs = packageOf(target);
      if (theirs && theirs !== own) found.push(`${fileName}:${line}: imports "${spec}" (${theirs})`);
    }
  }
  return found;
}

function main(): void {
  const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "*.ts"], {
    cwd: ROOT,
    encoding: "utf8",
  })
    .split("\n")
    .filter((f) => f !== "" && !f.includes("/gen/") && !f.includes("node_modules/"));
  const found = files.flatMap((f) => {
    try {
      return deepImports(f, readFileSync(join(ROOT, f), "utf8"));
    } catch {
      return []; // listed by git, deleted in the working tree
    }
  });
  if (found.length === 0) {
    process.stdout.write(`imports into another package's files: none in ${files.length} files\n`);
    return;
  }
  process.stderr.write(
    `imports into another package's files (use its exports, or @gw/testkit for shared test code):\n${found.join("\n")}\n`,
  );
  process.exitCode = 1;
}

if (import.meta.main) main();
