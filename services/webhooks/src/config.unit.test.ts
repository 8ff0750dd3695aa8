import { describe, expect, it } from "vitest";
import { configSchema, DEFAULT_RETRY_SCHEDULE_MS } from "./config.ts";

describe("webhooks config", () => {
  it("blocks private targets unless the flag says otherwise", () => {
    expect(configSchema.parse({}).WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe(false);
    expect(configSchema.parse({ WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" }).WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe(
      true,
    );
    expect(configSchema.parse({ WEBHOOK_ALLOW_PRIVATE_TARGETS: "false" }).WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe(
      false,
    );
    expect(configSchema.safeParse({ WEBHOOK_ALLOW_PRIVATE_TARGETS: "yes" }).success).toBe(false);
  });

  it("retries over at least a day by default", () => {
    const schedule = configSchema.parse({}).WEBHOOK_RETRY_SCHEDULE_MS;
    expect(schedule).toEqual(DEFAULT_RETRY_SCHEDULE_MS);
    expect(schedule.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(24 * 3600 * 1000);
  });

  it("reads a retry schedule from a comma list and refuses a bad one", () => {
    expect(
      configSchema.parse({ WEBHOOK_RETRY_SCHEDULE_MS: "100, 200,300" }).WEBHOOK_RETRY_SCHEDULE_MS,
    ).toEqual([100, 200, 300]);
    for (const bad of ["", "100,,200", "100,-5", "1.5", "abc"]) {
      expect(configSchema.safeParse({ WEBHOOK_RETRY_SCHEDULE_MS: bad }).success).toBe(false);
    }
  });
});
