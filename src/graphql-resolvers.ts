import { type Type } from '@nestjs/common';
import { LiveResolver } from './live/live.resolver.js';
import { SessionUpdateResolver } from './session/session-update.resolver.js';
import { SearchResolver } from './session/search.resolver.js';
import { SessionResolver } from './session/session.resolver.js';
import { SpoolResolver } from './spool/spool.resolver.js';
import { MessageChangesResolver } from './transcript/changes/message-changes.resolver.js';
import { TranscriptResolver } from './transcript/transcript.resolver.js';

/**
 * Every resolver class of the API: ScribeResolversModule provides these, and the schema script
 * builds `schema.gql` from them.
 */
export const SCHEMA_RESOLVERS: Type<unknown>[] = [
  LiveResolver,
  SessionResolver,
  SearchResolver,
  SessionUpdateResolver,
  SpoolResolver,
  TranscriptResolver,
  MessageChangesResolver,
];
