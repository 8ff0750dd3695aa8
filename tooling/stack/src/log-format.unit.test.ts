import { describe, expect, it } from "vitest";
import { formatLogLine } from "./log-format.ts";

describe("formatLogLine", () => {
  it("shows a pino line as level, message and the remaining fields", () => {
    const line = JSON.stringify({ level: 40, time: "t", service: "edge", pid: 1, msg: "slow", ms: 12 });
    expect(formatLogLine(line)).toBe('WARN  slow {"ms":12}');
  });

  it("leaves a line that is not JSON as it came", () => {
    expect(formatLogLine("config: ADMIN_TOKEN: at least 32 characters")).toBe(
      "config: ADMIN_TOKEN: at least 32 characters",
    );
  });
});
