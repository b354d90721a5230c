import { Args, Mutation, Query, Resolver } from '@nestjs/graphql';
import { NotesService } from './notes.service.js';

/** The host's own fields: Scribe's scopes and checks do not apply to them. */
@Resolver()
export class HelloResolver {
  constructor(private readonly notes: NotesService) {}

  @Query(() => String)
  hello(): string {
    return 'Hello from the host';
  }

  /** Appends a note through the injected TranscriptService and answers its status. */
  @Mutation(() => String)
  note(@Args('sessionId') sessionId: string, @Args('text') text: string): Promise<string> {
    return this.notes.note(sessionId, text);
  }
}
