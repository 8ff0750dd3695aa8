import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { Code } from "@connectrpc/connect";
import {
  isPublicErrorCode,
  PUBLIC_ERRORS,
  type PublicErrorCode,
  type PublicErrorSpec,
  reaches,
} from "@gw/api";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { DEFAULT_CODE_BY_STATUS, HTTP_STATUS_BY_CONNECT_CODE } from "./errors.ts";
import { errorExample } from "./reference/examples.ts";

// libs/api's PUBLIC_ERRORS states each code's status once; this reads where the codes are
// really raised, without booting anything, and checks the table against it:
// - the error catalogues of services/*/src and libs/*/src (the files named errors.ts or
//   catalogue.ts, as tooling/scripts/check-inline-failures.ts finds them): every
//   `failure(Code.X, "code", ...)` and every catalogue row `{ connect: Code.X, public: "code" }`,
//   the status being HTTP_STATUS_BY_CONNECT_CODE[X];
// - the edge's own `new ApiError(status, "code", ...)` in services/edge/src;
// - the edge's fallback code per status (DEFAULT_CODE_BY_STATUS).
// A code's statuses in the table (status, otherStatuses, rewrittenFrom) must be exactly
// the ones found, so a status the table hides or a stale one fails here.

const ROOT = resolve(import.meta.dirname, "../../..");

/**
 * The `failure()` calls whose public code is no string literal, and the codes each can
 * carry (read off the types named). A new one fails the test until it is stated here.
 */
const NON_LITERAL: Record<string, readonly PublicErrorCode[]> = {
  // QuoteRefusal["refusal"] of @gw/money.
  "services/ledger/src/errors.ts q.refusal": ["pricing_not_configured", "fx_rate_missing"],
  // The dead-letter errors' `code` (libs/events/src/dead-letters.ts), one per branch.
  "libs/events/src/errors.ts err.code#Code.NotFound": ["dead_letter_not_found"],
  "libs/events/src/errors.ts err.code#Code.FailedPrecondition": [
    "dead_letter_resolved",
    "dead_letter_retry_failed",
  ],
  // The operations catalogue's rows, which are collected themselves.
  "services/operations/src/domain/lifecycle/catalogue.ts entry.public": [],
};

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "gen") continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) tsFiles(path, out);
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts") && !name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

/** Every error catalogue: errors.ts and catalogue.ts under services/<svc>/src and libs/<lib>/src. */
function catalogueFiles(): string[] {
  return ["services", "libs"]
    .flatMap((top) => readdirSync(join(ROOT, top)).map((pkg) => join(ROOT, top, pkg, "src")))
    .filter((dir) => existsSync(dir))
    .flatMap((dir) => tsFiles(dir))
    .filter((f) => ["errors.ts", "catalogue.ts"].includes(basename(f)));
}

type Found = { code: string; status: number; where: string };

const parse = (path: string) =>
  ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);

/** `Code.X` as its HTTP status, or undefined for anything else. */
function statusOfConnect(expr: ts.Node | undefined): number | undefined {
  if (!expr || !ts.isPropertyAccessExpression(expr) || expr.expression.getText() !== "Code") return undefined;
  const code = Code[expr.name.text as keyof typeof Code];
  return code === undefined ? undefined : HTTP_STATUS_BY_CONNECT_CODE[code];
}

/** What the catalogues raise, with the status the edge gives it. */
function fromCatalogues(): { found: Found[]; unresolved: string[] } {
  const found: Found[] = [];
  const unresolved: string[] = [];
  for (const path of catalogueFiles()) {
    const source = parse(path);
    const file = relative(ROOT, path).split("\\").join("/");
    const at = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const visit = (node: ts.Node): void => {
      if (
        ts.isCallExpression(node) &&
        ts.isIdentifier(node.expression) &&
        node.expression.text === "failure" &&
        node.arguments.length >= 2
      ) {
        const [connect, pub] = node.arguments;
        const status = statusOfConnect(connect);
        if (pub && ts.isStringLiteral(pub) && status !== undefined) {
          found.push({ code: pub.text, status, where: at(node) });
        } else {
          const key = `${file} ${pub?.getText()}`;
          const codes = NON_LITERAL[`${key}#${connect?.getText()}`] ?? NON_LITERAL[key];
          if (codes === undefined)
            unresolved.push(`${at(node)}: failure(${connect?.getText()}, ${pub?.getText()})`);
          else if (status !== undefined)
            for (const code of codes) found.push({ code, status, where: at(node) });
        }
      }
      if (ts.isObjectLiteralExpression(node)) {
        const prop = (name: string) =>
          node.properties.find(
            (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText() === name,
          )?.initializer;
        const status = statusOfConnect(prop("connect"));
        const pub = prop("public");
        if (status !== undefined && pub && ts.isStringLiteral(pub))
          found.push({ code: pub.text, status, where: at(node) });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { found, unresolved };
}

/** The edge's own `new ApiError(<status>, "<code>", ...)`. */
function fromEdge(): Found[] {
  const found: Found[] = [];
  for (const path of tsFiles(join(ROOT, "services/edge/src"))) {
    const source = parse(path);
    const file = relative(ROOT, path).split("\\").join("/");
    const visit = (node: ts.Node): void => {
      if (ts.isNewExpression(node) && node.expression.getText() === "ApiError") {
        const [status, code] = node.arguments ?? [];
        // The ones built from a variable (fromConnectError, toApiError) are the mapping itself.
        if (status && ts.isNumericLiteral(status) && code && ts.isStringLiteral(code))
          found.push({
            code: code.text,
            status: Number(status.text),
            where: `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`,
          });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

const fallbacks = (): Found[] =>
  Object.entries(DEFAULT_CODE_BY_STATUS).map(([status, code]) => ({
    code: code!,
    status: Number(status),
    where: "DEFAULT_CODE_BY_STATUS",
  }));

const tableStatuses = (code: PublicErrorCode): number[] => {
  const spec: PublicErrorSpec = PUBLIC_ERRORS[code];
  return [spec.status, ...(spec.otherStatuses ?? []), ...(spec.rewrittenFrom ? [spec.rewrittenFrom] : [])];
};

const sorted = (xs: Iterable<number>) => [...new Set(xs)].sort((a, b) => a - b);

describe("the public error table (libs/api PUBLIC_ERRORS)", () => {
  const catalogues = fromCatalogues();
  const edge = fromEdge();

  it("finds the catalogues and the edge's errors (the scan is not blind)", () => {
    expect(catalogues.found.length).toBeGreaterThan(40);
    expect(edge.length).toBeGreaterThan(20);
    expect(catalogues.unresolved).toEqual([]);
  });

  it("knows every code raised, as a service code when a catalogue raises it", () => {
    for (const { code, where } of [...catalogues.found, ...edge]) {
      expect(isPublicErrorCode(code), `${where}: ${code}`).toBe(true);
    }
    for (const { code, where } of catalogues.found) {
      expect(PUBLIC_ERRORS[code as PublicErrorCode].from, `${where}: ${code}`).toBe("service");
    }
  });

  it("gives each code exactly the statuses it is raised with", () => {
    const raised = new Map<string, number[]>();
    for (const { code, status } of [...catalogues.found, ...edge, ...fallbacks()])
      raised.set(code, [...(raised.get(code) ?? []), status]);
    const table = Object.fromEntries(
      Object.keys(PUBLIC_ERRORS).map((code) => [code, sorted(tableStatuses(code as PublicErrorCode))]),
    );
    const real = Object.fromEntries(
      Object.keys(PUBLIC_ERRORS).map((code) => [code, sorted(raised.get(code) ?? [])]),
    );
    expect(real).toEqual(table);
  });

  it("has every service code raised by a catalogue", () => {
    const inCatalogues = new Set(catalogues.found.map((f) => f.code));
    const services = Object.entries(PUBLIC_ERRORS)
      .filter(([, spec]) => spec.from === "service")
      .map(([code]) => code);
    expect(services.filter((code) => !inCatalogues.has(code))).toEqual([]);
  });

  it("says which status a rewritten code really answers with (the edge raises that one)", () => {
    for (const [code, spec] of Object.entries(PUBLIC_ERRORS) as [PublicErrorCode, PublicErrorSpec][]) {
      if (spec.rewrittenFrom === undefined) continue;
      expect(
        edge.some((e) => e.code === code && e.status === spec.status),
        code,
      ).toBe(true);
    }
  });

  it("shows in the document's error examples a code a merchant gets with that status", () => {
    for (const status of [400, 401, 403, 404, 405, 410, 412, 413, 415, 429, 500, 503]) {
      const { code } = (errorExample(String(status)) as { error: { code: PublicErrorCode } }).error;
      expect(tableStatuses(code), `${status} ${code}`).toContain(status);
      expect(reaches(code, "merchant"), `${status} ${code}`).toBe(true);
    }
  });
});
