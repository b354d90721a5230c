import { Field, Float, ID, Int, ObjectType } from '@nestjs/graphql';

@ObjectType({ description: 'Spool files of one session and reason.' })
export class SpoolSessionFiles {
  @Field(() => ID, { description: 'The session the spooled messages belong to.' })
  sessionId: string;

  @Field({ description: 'Why they were spooled: transcript_cap_drop, shutdown, or another tool.' })
  reason: string;

  @Field(() => Int, { description: 'How many files.' })
  files: number;
}

@ObjectType({ description: 'The on-disk spool of this instance.' })
export class SpoolStatus {
  @Field({ description: 'The spool directory.' })
  path: string;

  @Field({ description: 'Whether a file can be written there now.' })
  writable: boolean;

  @Field(() => String, { nullable: true, description: 'Why not, when it cannot.' })
  error: string | null;

  @Field(() => Int, { description: 'Message files waiting to be replayed.' })
  files: number;

  @Field(() => Int, { description: 'Unreadable files set aside as *.bad.' })
  badFiles: number;

  @Field(() => Float, { nullable: true, description: 'Age of the oldest file in milliseconds.' })
  oldestFileAgeMs: number | null;

  @Field(() => [SpoolSessionFiles], { description: 'Files per session and reason.' })
  sessions: SpoolSessionFiles[];
}
