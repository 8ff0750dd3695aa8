/**
 * A service whose start finishes only when a line arrives on stdin, run by
 * `signals.test.ts` as its own process: it prints `starting` once `stopOnSignals` has its
 * start, and `stopped` from its stop.
 */
import { stopOnSignals } from "./index.ts";

const start = new Promise<{ stop(): Promise<void> }>((resolve) => {
  process.stdin.once("data", () =>
    resolve({
      stop: async () => {
        process.stdout.write("stopped\n");
      },
    }),
  );
});
const started = stopOnSignals(start);
process.stdout.write("starting\n");
await started;
process.stdout.write("started\n");
