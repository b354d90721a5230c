import { registerEnumType } from '@nestjs/graphql';
import { AppendStatus } from '../append-status.js';

// The domain enum, described for the GraphQL schema.
export { AppendStatus };

registerEnumType(AppendStatus, {
  name: 'AppendStatus',
  description: 'What happened to an accepted append.',
  valuesMap: {
    PERSISTED: { description: 'Stored in the database before the answer was sent.' },
    QUEUED: {
      description:
        'The database could not take the write; the message is held and will be stored in its accepted place once it can.',
    },
  },
});
