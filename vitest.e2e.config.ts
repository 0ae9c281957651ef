import { defineConfig } from 'vitest/config';

/** The heavy end-to-end suites: `npm run test:e2e` (also run by `.ci/run`). */
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.e2e.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
