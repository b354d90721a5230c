import { availableParallelism } from 'node:os';

// Nest 12 ships as ES modules only, so Jest runs in its native ESM mode
// (npm scripts pass --experimental-vm-modules) and ts-jest emits ESM.
const tsJest = [
  'ts-jest',
  { useESM: true, tsconfig: 'tsconfig.json', diagnostics: { ignoreCodes: ['TS151001'] } },
];

/** @type {import('jest').Config} */
const shared = {
  moduleFileExtensions: ['js', 'json', 'ts'],
  extensionsToTreatAsEsm: ['.ts'],
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': tsJest },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  clearMocks: true,
};

/** @type {import('jest').Config} */
export default {
  // e2e suites start real server processes; a start alone takes seconds on a busy machine.
  // (Jest reads testTimeout from the top level only, not per project.)
  testTimeout: 60_000,
  // Jest's default is one worker fewer than the cores: one, on a machine of two. The e2e
  // suites mostly wait (on their server processes, on faults they time), so two side by side
  // keep both cores busy: on CI's two cores the run took 26 minutes with one.
  maxWorkers: Math.max(2, availableParallelism() - 1),
  projects: [
    { ...shared, displayName: 'unit', rootDir: 'src', testMatch: ['**/*.spec.ts'] },
    { ...shared, displayName: 'e2e', rootDir: 'test', testMatch: ['**/*.e2e-spec.ts'] },
  ],
};
