import { defineConfig } from 'vitest/config';

// Quiet Powertools in tests: logs at WARN, no EMF metric lines on stdout.
const env = { POWERTOOLS_LOG_LEVEL: 'WARN', POWERTOOLS_METRICS_DISABLED: 'true', AWS_REGION: 'us-east-1' };

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/infra/**/*.test.ts'],
          // Temporary directories under one of the run's own, removed at its end.
          globalSetup: ['test/support/temp-root.ts'],
          env,
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/integration/global-setup.ts'],
          env,
          // One broker and one emulator: files run one after another so they do not starve each other.
          pool: 'forks',
          poolOptions: { forks: { singleFork: true } },
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
