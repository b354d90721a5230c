import { Injectable } from '@nestjs/common';
import { MessageRole, TranscriptService } from '@scribe/server';

/** The host's own use of Scribe: a note is one USER message appended to a session. */
@Injectable()
export class NotesService {
  // A value import of TranscriptService: Nest reads the parameter's type from emitted metadata.
  constructor(private readonly transcripts: TranscriptService) {}

  /** Appends `text` and says how far it got: PERSISTED, or QUEUED while the database is down. */
  async note(sessionId: string, text: string): Promise<string> {
    const { status } = await this.transcripts.append(sessionId, [
      { role: MessageRole.USER, content: text },
    ]);
    return status;
  }
}
