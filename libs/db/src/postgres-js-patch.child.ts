/**
 * Child process of postgres-js-patch.test.ts: on a connection through the fault proxy it
 * sends a statement that the proxy cuts, then lets postgres.js write to the dead
 * connection again, as code that cleans up after a failed statement does. An unpatched
 * postgres.js 3.4.9 throws from a `setImmediate` there and this process dies; patched, the
 * second statement fails with a catchable error and the process reports both errors.
 *
 * Usage: node postgres-js-patch.child.ts <url> <reserve|begin>; it talks to its parent over
 * IPC: it sends "ready" when the statement to be cut is next, waits for "go", and at the
 * end sends `{ first, second }`, the codes of the two errors.
 */
import postgres from "postgres";

const [url, scenario] = process.argv.slice(2);
if (url === undefined || (scenario !== "reserve" && scenario !== "begin"))
  throw new Error("usage: postgres-js-patch.child.ts <url> <reserve|begin>");

const codeOf = (err: unknown) => String((err as { code?: unknown } | null)?.code ?? err);
const go = () =>
  new Promise<void>((resolve) => {
    process.send?.("ready");
    process.once("message", () => resolve());
  });

const sql = postgres(url, { max: 2, onnotice: () => {} });
let first = "none";
let second = "none";
if (scenario === "reserve") {
  const conn = await sql.reserve();
  await conn`select 1`;
  await go();
  await conn`select 2`.catch((err: unknown) => {
    first = codeOf(err);
  });
  // The write that an unpatched postgres.js defers to a socket already gone.
  await conn`select 3`.catch((err: unknown) => {
    second = codeOf(err);
  });
} else {
  await sql
    .begin(async (tx) => {
      await tx`select 1`;
      await go();
      // Its failure makes begin() send ROLLBACK on the dead connection.
      await tx`select 2`.catch((err: unknown) => {
        first = codeOf(err);
        throw err;
      });
    })
    .catch((err: unknown) => {
      second = codeOf(err);
    });
}
await sql.end({ timeout: 1 });
process.send?.({ first, second });
process.disconnect?.();
