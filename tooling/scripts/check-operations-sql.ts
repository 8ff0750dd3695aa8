/**
 * Fails when a file of services/operations/src outside its repository
 * (src/repository/) runs SQL itself: a tagged template (`sql\`...\``, `tx\`...\``, any tag)
 * or an import of `postgres`. Tests (*.test.ts) may, as they set rows up and look at
 * them, and so may the test harness, which lives outside src/ (services/operations/test/);
 * so may the drizzle schema (src/db/), whose `sql` fragments are DDL, never run. The
 * repository is then the only code that reads and writes the operations schema. Part of
 * `pnpm run lint`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";

const ROOT = resolve(import.meta.dirname, "../..");
const SRC = join(ROOT, "services/operations/src");

/** Whether `path` (relative to services/operations/src, `/`-separated) may run SQL. */
export function exempt(path: string): boolean {
  return path.startsWith("repository/") || path.startsWith("db/") || path.endsWith(".test.ts");
}

/** What in `text` runs SQL outside the repository: one line per finding, with its line number. */
export function violations(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isTaggedTemplateExpression(node))
      found.push(`${fileName}:${at(node)}: tagged template \`${node.tag.getText(source)}\`...\``);
    else if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier) &&
      /^postgres(\/|$)/.test(node.moduleSpecifier.text)
    )
      found.push(`${fileName}:${at(node)}: imports "${node.moduleSpecifier.text}"`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files(path, out);
    else if (name.endsWith(".ts")) out.push(path);
  }
  return out;
}

function main(): void {
  const checked = files(SRC).filter((f) => !exempt(relative(SRC, f).split("\\").join("/")));
  const found = checked.flatMap((f) => violations(relative(ROOT, f), readFileSync(f, "utf8")));
  if (found.length === 0) {
    process.stdout.write(`operations SQL outside src/repository: none in ${checked.length} files\n`);
    return;
  }
  for (const line of found) console.error(line);
  process.stderr.write(
    `${found.length} SQL use(s) outside services/operations/src/repository: call a repository function instead\n`,
  );
  process.exit(1);
}

if (import.meta.main) main();
