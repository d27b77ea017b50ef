import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    reporters: ["default", "./test/support/summary-reporter.ts"],
    projects: [
      {
        test: {
          name: "unit",
          include: ["libs/*/src/**/*.test.ts", "services/*/src/**/*.test.ts", "scripts/**/*.test.ts", "eval/**/*.test.ts"],
          environment: "node",
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/**/*.test.ts"],
          environment: "node",
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // Each suite starts its own processes; running suites one at a time keeps a 2-core machine honest.
          fileParallelism: false,
        },
      },
    ],
  },
});
