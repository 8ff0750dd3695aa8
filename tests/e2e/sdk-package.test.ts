import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "@gw/stack/stack";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../src/stack.ts";

// @gw/sdk as a merchant gets it: `npm pack` of sdk/typescript (and `pnpm pack`, which
// must give the same package), installed with plain npm into a project outside the
// workspace, a merchant script typechecked under strict + NodeNext against the installed
// types, compiled, and run with Node against a whole stack.
const run = promisify(execFile);
const SDK = join(REPO_ROOT, "sdk", "typescript");
const CATALOG = readFileSync(join(REPO_ROOT, "pnpm-workspace.yaml"), "utf8");
const pinned = (name: string) => {
  const version = CATALOG.match(
    new RegExp(`^\\s+"?${name.replace("/", "\\/")}"?:\\s*\\^?([\\d.]+)`, "m"),
  )?.[1];
  if (!version) throw new Error(`${name} is not in the catalog`);
  return version;
};
// The npm next to the Node that runs the tests (env.sh puts it first on PATH); quiet and
// offline-first: a tarball already in npm's cache is not fetched again.
const npm = (args: string[], cwd: string) =>
  run("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline"], {
    cwd,
    env: { ...process.env, npm_config_update_notifier: "false" },
    maxBuffer: 16 * 1024 * 1024,
  });

const MERCHANT_SCRIPT = `import { randomUUID } from "node:crypto";
import { GatewayClient, GatewayError, isGatewayError, WEBHOOK_EVENT_TYPES, type Operation } from "@gw/sdk";

const [baseUrl, apiKey] = process.argv.slice(2);
if (!baseUrl || !apiKey) throw new Error("usage: merchant.js <baseUrl> <apiKey>");
const gateway = new GatewayClient({ baseUrl, apiKey });
const body = {
  merchant_operation_id: \`order-\${randomUUID()}\`,
  client_id: "customer-1",
  method: "WT_RUB_C2C",
  amount: "1000.00",
  currency: "RUB",
} as const;
const payment: Operation = await gateway.createPayment(body);
const again = await gateway.createPayment(body);
const state = await gateway.getOperationState({ merchant_operation_id: body.merchant_operation_id });
const { balances } = await gateway.getBalances();
let conflict = "";
try {
  await gateway.createPayment({ ...body, amount: "1001.00" });
} catch (err) {
  if (err instanceof GatewayError && isGatewayError(err, "idempotency_conflict")) conflict = \`\${err.status} \${err.code}\`;
}
console.log(JSON.stringify({
  status: payment.status,
  same: again.operation_id === payment.operation_id,
  state: state.status,
  currencies: balances.map((row) => row.currency),
  conflict,
  events: WEBHOOK_EVENT_TYPES.length,
}));
`;

const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    types: ["node"],
    outDir: "out",
    // The installed package's own declarations are checked too.
    skipLibCheck: false,
  },
  include: ["merchant.ts"],
};

describe("@gw/sdk packed, installed with npm outside the workspace, used by a merchant script", () => {
  let stack: TestStack;
  let scratch: string;
  let tarballs: { npm: string; pnpm: string };

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), "gw-sdk-merchant-"));
    const packed = async (tool: "npm" | "pnpm") => {
      const into = join(scratch, `${tool}-pack`);
      mkdirSync(into);
      // One pack at a time: both rewrite sdk/typescript/package.json between prepack and postpack.
      await run(tool, ["pack", "--pack-destination", into], { cwd: SDK, maxBuffer: 16 * 1024 * 1024 });
      const [file] = readdirSync(into).filter((f) => f.endsWith(".tgz"));
      if (!file) throw new Error(`${tool} pack wrote no tarball`);
      return join(into, file);
    };
    const booting = startTestStack();
    // Awaited in `finally`; until then a failed boot must not count as an unhandled rejection.
    booting.catch(() => {});
    try {
      tarballs = { npm: await packed("npm"), pnpm: await packed("pnpm") };
      const project = join(scratch, "merchant");
      mkdirSync(project);
      writeFileSync(
        join(project, "package.json"),
        JSON.stringify({ name: "merchant", private: true, type: "module" }),
      );
      await npm(
        [
          "install",
          tarballs.npm,
          `typescript@${pinned("typescript")}`,
          `@types/node@${pinned("@types/node").split(".")[0]}`,
        ],
        project,
      );
    } finally {
      stack = await booting;
    }
  }, 300_000);

  afterAll(async () => {
    await stack?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("packs the same manifest with npm and pnpm: exports and types in dist, real version ranges, no workspace packages", async () => {
    const manifestOf = async (tarball: string) =>
      JSON.parse((await run("tar", ["-xzOf", tarball, "package/package.json"])).stdout) as Record<
        string,
        unknown
      >;
    const fromNpm = await manifestOf(tarballs.npm);
    expect(await manifestOf(tarballs.pnpm)).toEqual(fromNpm);
    expect(fromNpm).toMatchObject({
      name: "@gw/sdk",
      license: "Apache-2.0",
      repository: expect.objectContaining({ directory: "sdk/typescript" }),
      exports: { ".": { types: "./dist/index.d.ts", import: "./dist/index.js" } },
    });
    expect(fromNpm).not.toHaveProperty("devDependencies");
    expect(fromNpm).not.toHaveProperty("scripts");
    for (const range of Object.values(fromNpm.dependencies as Record<string, string>)) {
      expect(range).toMatch(/^\^\d+\.\d+\.\d+$/);
    }
    const files = (await run("tar", ["-tzf", tarballs.npm])).stdout.split("\n").filter(Boolean);
    expect(files).toEqual(
      expect.arrayContaining(["package/dist/index.js", "package/dist/index.d.ts", "package/LICENSE"]),
    );
    expect(files.filter((f) => f.startsWith("package/src/"))).toEqual([]);
    // The workspace's own manifest is back as it was after both packs.
    const workspace = JSON.parse(readFileSync(join(SDK, "package.json"), "utf8"));
    expect(workspace.exports).toEqual({ ".": "./src/index.ts" });
  });

  it("typechecks a merchant script under strict + NodeNext against the installed package, and it runs against the gateway", async () => {
    const project = join(scratch, "merchant");
    writeFileSync(join(project, "tsconfig.json"), JSON.stringify(TSCONFIG, null, 2));
    writeFileSync(join(project, "merchant.ts"), MERCHANT_SCRIPT);
    const tsc = join(project, "node_modules", "typescript", "bin", "tsc");
    const compiled = await run(process.execPath, [tsc, "-p", "."], { cwd: project }).catch(
      (err: { stdout?: string }) => {
        throw new Error(`tsc failed:\n${err.stdout}`);
      },
    );
    expect(compiled.stdout).toBe("");
    // Resolved by Node from the scratch project's node_modules, not the workspace.
    const resolved = (
      await run(
        process.execPath,
        ["--input-type=module", "-e", 'console.log(import.meta.resolve("@gw/sdk"))'],
        {
          cwd: project,
        },
      )
    ).stdout.trim();
    expect(resolved).toBe(`file://${join(project, "node_modules", "@gw", "sdk", "dist", "index.js")}`);

    const shop = await stack.provisionShop({ name: "sdk-package" });
    const { stdout } = await run(
      process.execPath,
      [join(project, "out", "merchant.js"), stack.urls.edge, shop.apiKey],
      {
        cwd: project,
      },
    );
    expect(JSON.parse(stdout)).toEqual({
      status: "pending",
      same: true,
      state: "pending",
      currencies: expect.arrayContaining(["RUB"]),
      conflict: "412 idempotency_conflict",
      events: 7,
    });
  });
});
