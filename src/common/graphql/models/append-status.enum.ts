import { registerEnumType } from '@nestjs/graphql';
import { AppendStatus } from '../../../message/append-status.js';

// The domain enum (imported from its one home, message/), described for the GraphQL schema:
// the models that carry it import this file for that effect.

registerEnumType(AppendStatus, {
  name: 'AppendStatus',
  description:
    'What an accepted append promises. A batch answers the weakest status among its messages.',
  valuesMap: {
    PERSISTED: { description: 'Committed to the database before the answer was sent.' },
    QUEUED: {
      description:
        'The database could not take it; it is in the journal on local disk (synced before the answer was sent) and will be stored in its accepted place once the database can, surviving a crash or restart of this instance.',
    },
    BUFFERED: {
      description:
        "Neither the database nor the local disk could take it: held in this instance's memory only, best effort. A crash loses it, and past MAX_PENDING_PER_SESSION the oldest are dropped. Retrying elsewhere is safe with the same clientMessageId.",
    },
  },
});
