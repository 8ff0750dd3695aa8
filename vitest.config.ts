import { defineConfig } from "vitest/config";

// CI asks for a machine-readable result too (see .ci/run): the same run, one more reporter.
const jsonReport = process.env.GW_TEST_JSON;

// One run for the whole tree: unit and integration tests beside the code (they talk to
// the real Postgres and NATS, each run in its own database and subject prefix), and the
// black-box suites in tests/ that boot the whole stack as separate processes.
export default defineConfig({
  test: {
    ...(jsonReport ? { reporters: ["default", "json"], outputFile: { json: jsonReport } } : {}),
    // Two cores: files run two at a time so integration tests do not starve each other.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          name: "libs+services",
          include: [
            "libs/*/src/**/*.test.ts",
            "services/*/src/**/*.test.ts",
            "tooling/*/src/**/*.test.ts",
            "deploy/src/**/*.test.ts",
            "sdk/*/src/**/*.test.ts",
            "scripts/**/*.test.ts",
            "tooling/scripts/*.test.ts",
          ],
        },
      },
      {
        extends: true,
        test: {
          name: "e2e",
          include: ["tests/e2e/**/*.test.ts"],
          // After every other test file, and one file at a time: a whole stack takes
          // eight processes, free ports and up to 32 Postgres connections, which must not
          // race the integration tests' own servers and pools.
          sequence: { groupOrder: 1 },
          fileParallelism: false,
          testTimeout: 60_000,
        },
      },
    ],
  },
});
