// Part of `pnpm run check`: generated protobuf code is committed, so it must be exactly
// what the protos produce. Regenerates libs/proto/src/gen with buf, lints proto/, and
// fails when git sees any difference in the generated folder.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const protoLib = join(root, "libs", "proto");
const bin = join(protoLib, "node_modules", ".bin");
// buf finds the protoc-gen-es plugin on PATH.
const env = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}` };

function run(what: string, command: string, args: string[], cwd: string): string {
  const result = spawnSync(command, args, { cwd, env, encoding: "utf8" });
  if (result.error || result.status !== 0) {
    console.error(`check-generated: ${what} failed${result.error ? `: ${result.error.message}` : ""}`);
    process.stderr.write(result.stdout ?? "");
    process.stderr.write(result.stderr ?? "");
    process.exit(1);
  }
  return result.stdout;
}

run("buf lint of proto/", join(bin, "buf"), ["lint"], join(root, "proto"));
run(
  "buf generate of libs/proto",
  join(bin, "buf"),
  ["generate", "../../proto", "--template", "buf.gen.yaml"],
  protoLib,
);
const changed = run("git status", "git", ["status", "--porcelain", "--", "libs/proto/src/gen"], root).trim();
if (changed !== "") {
  console.error(
    "check-generated: libs/proto/src/gen differs from what proto/ generates.\n" +
      "Run `pnpm --filter @gw/proto generate` and commit libs/proto/src/gen together with the .proto change:\n" +
      changed,
  );
  process.exit(1);
}
