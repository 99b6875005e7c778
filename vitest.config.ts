import { defineConfig } from 'vitest/config';

// Two layers, each with its own tool (STYLE.md habit 9): pure unit tests with no I/O, and integration /
// end-to-end tests against the real local control plane, Redis and tofu, started once by the global setup.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/env/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 300_000,
          // One real control plane is shared; files run one at a time so they do not fight over Job slots.
          fileParallelism: false,
        },
      },
    ],
  },
});
