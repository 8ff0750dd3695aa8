/**
 * Fails when code outside an error catalogue raises a domain failure inline: a call of
 * `failure(...)` (libs/rpc's Connect error with a public code), or an import of `failure`
 * from `@gw/rpc`, anywhere in services/<svc>/src or libs/<lib>/src. A catalogue is a file
 * named `errors.ts` or `catalogue.ts` (services/ledger/src/errors.ts,
 * services/operations/src/lifecycle/catalogue.ts, ...): there each error is named once,
 * with its Connect code, its public code and its message, and the rest of the service
 * raises it by name. Tests (*.test.ts, test-support.ts, testing.ts) may build failures of
 * their own. Part of `pnpm run lint`.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import ts from "typescript";

const ROOT = resolve(import.meta.dirname, "../..");

/** Whether `path` (relative to the repository root, `/`-separated) may call `failure(`. */
export function exempt(path: string): boolean {
  const name = basename(path);
  return (
    name === "errors.ts" ||
    name === "catalogue.ts" ||
    name.endsWith(".test.ts") ||
    name === "test-support.ts" ||
    name === "testing.ts"
  );
}

/** The name a callee is known by: `failure` for `failure(...)` and `rpc.failure(...)`. */
function calleeName(expr: ts.Expression): string | undefined {
  if (ts.isIdentifier(expr)) return expr.text;
  if (ts.isPropertyAccessExpression(expr)) return expr.name.text;
  return undefined;
}

/** What in `text` raises a failure inline: one line per finding, with its line number. */
export function violations(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && calleeName(node.expression) === "failure")
      found.push(`${fileName}:${at(node)}: inline \`${node.expression.getText(source)}(...)\``);
    else if (
      ts.isImportDeclaration(node) &&
      ts.isStringLiteral(node.moduleSpecifier) &&
      node.moduleSpecifier.text === "@gw/rpc" &&
      node.importClause?.namedBindings &&
      ts.isNamedImports(node.importClause.namedBindings)
    ) {
      for (const spec of node.importClause.namedBindings.elements) {
        if ((spec.propertyName ?? spec.name).text === "failure")
          found.push(`${fileName}:${at(spec)}: imports \`failure\` from "@gw/rpc"`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "gen") continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files(path, out);
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** services/<svc>/src and libs/<lib>/src, every one there is. */
function sourceDirs(): string[] {
  return ["services", "libs"].flatMap((top) =>
    readdirSync(join(ROOT, top))
      .map((pkg) => join(ROOT, top, pkg, "src"))
      .filter((dir) => existsSync(dir)),
  );
}

function main(): void {
  const checked = sourceDirs()
    .flatMap((dir) => files(dir))
    .filter((f) => !exempt(relative(ROOT, f).split("\\").join("/")));
  const found = checked.flatMap((f) => violations(relative(ROOT, f), readFileSync(f, "utf8")));
  if (found.length === 0) {
    process.stdout.write(`inline failures outside the error catalogues: none in ${checked.length} files\n`);
    return;
  }
  for (const line of found) console.error(line);
  process.stderr.write(
    `${found.length} inline failure(s): name the error once in the service's errors.ts and raise it from there\n`,
  );
  process.exit(1);
}

if (import.meta.main) main();
