import { hostAppCases } from './host-app-cases.js';

// The host's GraphQLModule serves Scribe's fields beside its own.
hostAppCases('host');
