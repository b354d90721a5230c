// The package's public API (`@scribe/server`): what a host app may import. Anything not named
// here is internal and may change without notice.

// The module a host imports.
export { ScribeModule, type ScribeModuleAsyncOptions } from './scribe.module.js';
export { ScribeGraphQL } from './graphql/scribe-graphql.js';

// Services a host's own providers may inject.
export { TranscriptService } from './transcript/transcript.service.js';
export { SpoolService } from './spool/spool.service.js';
export { SessionResolveGate } from './session/session-resolve-gate.js';
// What the gate loads a session with: a host or a test overrides this provider to change it.
export { SessionLoader } from './session/session-loader.js';

// Errors: what the services above throw, and the codes, the same as the API answers.
export { ScribeException } from './common/errors/scribe.exception.js';
export { ScribeErrorCode } from './common/errors/scribe-error-code.js';

// Configuration: the options, the environment adapter `npm start` uses, and their errors.
export { type ScribeOptions, type ScribeGraphQLMode } from './config/scribe-options.js';
export {
  scribeOptionsFromEnvironment,
  serveSettingsFromEnvironment,
} from './config/scribe-options-from-environment.js';
export { InvalidScribeOptionsError } from './config/invalid-scribe-options.error.js';
export { ScribeConfig } from './config/scribe-config.js';

// Logs: the id of the request whose work is running, for a host's own logger to print.
export { currentRequestId } from './common/logging/request-context.js';

// The GraphQL models and enums Scribe's schema is built from, for a host's own resolvers.
export { AppendStatus } from './message/append-status.js';
export { MessageRole } from './message/message-role.js';
export { Message } from './common/graphql/models/message.model.js';
export {
  MessageConnection,
  MessageEdge,
} from './common/graphql/models/message-connection.model.js';
export { Session, SessionConnection } from './common/graphql/models/session.model.js';
export { GateStatus } from './session/models/gate-status.model.js';
export {
  AppendMessagePayload,
  AppendMessagesPayload,
} from './transcript/models/append-payload.model.js';
export { DeleteSessionPayload } from './transcript/models/delete-session-payload.model.js';
export { PendingSessionStatus, PendingStatus } from './transcript/models/pending-status.model.js';
export {
  SpoolBlocked,
  SpoolSessionMessages,
  SpoolSetAside,
  SpoolStatus,
} from './spool/models/spool-status.model.js';

// Events Scribe emits on its event bus after a write, for a host that reacts to stored messages.
export {
  MessagesStored,
  SessionChanged,
  SessionDeleted,
  SpoolRetryRequested,
  SPOOL_RETRY_REQUESTED_EVENT,
} from './message/message-events.js';
