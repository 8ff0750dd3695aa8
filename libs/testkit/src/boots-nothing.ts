// The unit tier's setup file (vitest.config.ts, project `unit`): a unit test boots
// nothing, so every way of reaching one is closed here. A test that connects a socket
// (Postgres, NATS, gRPC, fetch), listens on a port or starts a process fails with this
// message instead of passing slowly in the wrong tier; name it `*.test.ts` instead
// (the integration tier).
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";

const refuse = (what: string) => () => {
  throw new Error(
    `unit tests boot nothing: this test ${what}. A test that needs a socket, a server or a process is an integration test (*.test.ts, not *.unit.test.ts).`,
  );
};

net.Socket.prototype.connect = refuse("opened a connection") as never;
net.Server.prototype.listen = refuse("listened on a port") as never;
for (const name of ["spawn", "spawnSync", "fork", "exec", "execSync", "execFile", "execFileSync"] as const) {
  (childProcess as Record<string, unknown>)[name] = refuse(`started a process (child_process.${name})`);
}
// `import { spawn } from "node:child_process"` sees the change too.
syncBuiltinESMExports();
