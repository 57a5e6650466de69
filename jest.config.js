/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  // Every test is bounded; a hang fails instead of stalling CI.
  testTimeout: 30000,
  maxWorkers: 2,
};
