// The testing kit, `<package>/testing`: Scribe in a host's e2e tests.
export {
  createScribeTestingModule,
  type GqlAnswer,
  type ScribeTesting,
  type ScribeTestingOptions,
} from './scribe-testing.js';
export { type DatabaseFaults } from './database-faults.js';
export { startTcpProxy, type TcpProxy } from './tcp-proxy.js';
