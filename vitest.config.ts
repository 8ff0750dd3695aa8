import { defineConfig } from "vitest/config";

// CI asks for a machine-readable result too (see .ci/run): the same run, one more reporter.
const jsonReport = process.env.GW_TEST_JSON;

// Where the tests beside the code live (the black-box suites are in tests/e2e).
const roots = [
  "libs/*/src/**/",
  "services/*/src/**/",
  "services/*/test/**/",
  "tooling/*/src/**/",
  "deploy/src/**/",
  "sdk/*/src/**/",
  "scripts/**/",
  "tooling/scripts/",
];

// One run for the whole tree (`pnpm test`, `./gw test`), in three tiers a file's name
// decides (CONTRIBUTING.md, "Tests"):
// - unit, `*.unit.test.ts`: boots nothing. Its setup file makes a connection, a listening
//   port or a child process throw, so a test filed here that needs one fails loudly.
//   `pnpm test:unit` runs this tier alone.
// - integration, every other `*.test.ts` beside the code: real Postgres, NATS, gRPC and
//   HTTP servers inside the test process, each run in its own database and subject prefix.
// - e2e, tests/e2e: whole stacks as separate processes.
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
          name: "unit",
          include: roots.map((root) => `${root}*.unit.test.ts`),
          setupFiles: ["libs/testkit/src/boots-nothing.ts"],
          // With nothing to boot, import time is most of a unit file's time: the files
          // of a worker (a thread) share their modules, so a unit test leaves no global
          // state behind and mocks no module.
          pool: "threads",
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: roots.map((root) => `${root}*.test.ts`),
          exclude: ["**/node_modules/**", "**/*.unit.test.ts"],
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
