import { hostAppCases } from './host-app-cases.js';

// Scribe owns its GraphQL endpoint; the host serves its fields on a second one.
hostAppCases('own');
