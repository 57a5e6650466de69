/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  // Every test is bounded; a hang fails instead of stalling CI.
  testTimeout: 30000,
  maxWorkers: 2,
  // A worker whose heap has grown is replaced between files. Tearing down a large V8 heap at
  // exit (munmap) can take longer than the 500 ms jest allows a worker to end, and jest then
  // reports it as "failed to exit gracefully".
  workerIdleMemoryLimit: '512MB',
  // In the repository, not /tmp: the Soft-RoCE guest (npm run test:rdma) mounts the repository
  // at the same path, so it reuses what the host suite compiled instead of compiling again at
  // a fraction of the speed, in a /tmp that is new at every boot.
  cacheDirectory: '<rootDir>/node_modules/.cache/jest',
};
