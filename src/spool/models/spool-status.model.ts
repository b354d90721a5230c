import { Field, Float, ID, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import { FieldScope } from '../../common/auth/field-scope.js';
import { DatabaseCheck } from '../database-binding-rules.js';

registerEnumType(DatabaseCheck, {
  name: 'SpoolDatabaseCheck',
  description:
    'Whether the spool belongs to the database of this instance (its database.id names it). One SPOOL_DIR serves the instances of one database only.',
  valuesMap: {
    PENDING: {
      description:
        'Not known yet: the database has not answered since the start, or database.id cannot be read. Journals of other instances wait; this instance journals meanwhile.',
    },
    VERIFIED: { description: "The spool is this instance's database's." },
    REFUSED: {
      description:
        "The spool is another database's: its journals are not adopted and this instance journals nothing there (what the database cannot take is BUFFERED).",
    },
  },
});

@FieldScope('admin')
@ObjectType({ description: 'Journaled messages of one session still waiting for the database.' })
export class SpoolSessionMessages {
  @Field(() => ID, { description: 'The session.' })
  sessionId: string;

  @Field(() => Int, { description: 'Its messages on disk that are not stored yet.' })
  messages: number;
}

@FieldScope('admin')
@ObjectType({
  description:
    "A record or file the journal could not replay (set aside in set-aside.jsonl), or a file in the spool directory that is not the journal's (left untouched).",
})
export class SpoolSetAside {
  @Field(() => ID, {
    nullable: true,
    description:
      'What reDriveSetAside and dropSetAside name it by: stable across restarts. Null for a foreign file, which is not in the log.',
  })
  id: string | null;

  @Field({ description: 'The file it came from, or the foreign file.' })
  source: string;

  @Field({ description: 'Why it was set aside.' })
  reason: string;

  @Field(() => Float, {
    nullable: true,
    description: 'When it was set aside (epoch ms); null for a foreign file.',
  })
  at: number | null;

  @Field(() => ID, { nullable: true, description: 'Its session, when it was a readable record.' })
  sessionId: string | null;

  @Field(() => ID, {
    nullable: true,
    description: 'Its message id, when it was a readable record.',
  })
  messageId: string | null;
}

@FieldScope('admin')
@ObjectType({
  description:
    "A file of the journal that owes messages but cannot be used now: a segment that cannot be read (a changed mode, a missing file, an I/O error, over 2 GiB), a dead instance's lock file that is not usable, or set-aside.jsonl when it cannot be written. An outage, not corruption: nothing in it is set aside, and it is tried again with a growing wait.",
})
export class SpoolBlocked {
  @Field({ description: 'The file, in the spool directory.' })
  source: string;

  @Field({ description: 'Why it cannot be used, as last seen.' })
  reason: string;

  @Field(() => Int, {
    nullable: true,
    description:
      'Messages (or, for set-aside.jsonl, bad lines) it holds back; null when not known yet (not read).',
  })
  records: number | null;

  @Field(() => Float, { description: 'When it was first found blocked (epoch ms).' })
  since: number;
}

@FieldScope('admin')
@ObjectType({ description: 'The on-disk journal of this instance.' })
export class SpoolStatus {
  @Field({ description: 'The spool directory.' })
  path: string;

  @Field({ description: 'Whether a file can be written there now.' })
  writable: boolean;

  @Field(() => String, { nullable: true, description: 'Why not, when it cannot.' })
  error: string | null;

  @Field(() => Int, {
    description: 'Messages on disk waiting for the database, all sessions together.',
  })
  messages: number;

  @Field(() => Float, { description: 'Bytes of journal segments on disk.' })
  bytes: number;

  @Field(() => Float, {
    nullable: true,
    description:
      'Age in milliseconds of the oldest message in a segment that still holds waiting messages; null when none wait.',
  })
  oldestAgeMs: number | null;

  @Field(() => [SpoolSessionMessages], { description: 'Waiting messages per session.' })
  sessions: SpoolSessionMessages[];

  @Field(() => [SpoolSetAside], {
    description:
      'The most recent 100 open entries of set-aside.jsonl (not dropped or re-driven), and every foreign file.',
  })
  setAside: SpoolSetAside[];

  @Field(() => Int, {
    description:
      'Open entries of set-aside.jsonl in all (not dropped or re-driven), plus foreign files.',
  })
  setAsideCount: number;

  @Field(() => Int, {
    description:
      'Messages answered QUEUED that were lost since start because their segment was deleted or replaced under the running instance while only the disk held them (each is logged at ERROR).',
  })
  lostRecords: number;

  @Field(() => Int, {
    description:
      'Messages answered QUEUED whose segment was deleted or replaced under the running instance and that memory alone holds now (not counted in messages): lost in a crash until they are journaled again, which happens as soon as SPOOL_DIR is a directory this instance can write.',
  })
  buffered: number;

  @Field(() => [SpoolBlocked], {
    description:
      'Files owing messages that cannot be used now, oldest outage first; what they hold stays owed and replays once they can be read. Empty when none.',
  })
  blocked: SpoolBlocked[];

  @Field(() => DatabaseCheck, {
    description: "Whether the spool is known to belong to this instance's database.",
  })
  databaseCheck: DatabaseCheck;

  @Field(() => String, {
    nullable: true,
    description:
      'The database the spool belongs to, as its database.id names it; null when no instance has claimed it yet (or it cannot be read).',
  })
  databaseId: string | null;

  @Field(() => String, {
    nullable: true,
    description: "The identity of this instance's database; null until the database has answered.",
  })
  instanceDatabaseId: string | null;

  @Field(() => String, {
    nullable: true,
    description:
      'Why the spool was refused, or why the check could not be made; null when verified.',
  })
  databaseCheckReason: string | null;
}
