import { registerEnumType } from '@nestjs/graphql';

export enum AppendStatus {
  PERSISTED = 'PERSISTED',
  QUEUED = 'QUEUED',
}

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
