import { ConnectError } from "@connectrpc/connect";
import { errorInfo } from "@gw/rpc";
import { expect } from "vitest";

/** Awaits a call that must fail with a ConnectError; returns its code and ErrorInfo. */
export async function failureOf(p: Promise<unknown>) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  return { code: (err as ConnectError).code, info: errorInfo(err) };
}

/** Polls until `check` passes or the deadline runs out (then its last failure is thrown). */
export async function eventually<T>(
  fn: () => Promise<T>,
  check: (v: T) => void,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    try {
      check(v);
      return v;
    } catch (err) {
      if (Date.now() > end) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
