import { registerEnumType } from '@nestjs/graphql';
import { MessageRole } from '../../../message/message-role.js';

// The domain enum (imported from its one home, message/), described for the GraphQL schema:
// the models and inputs that carry it import this file for that effect.

registerEnumType(MessageRole, {
  name: 'MessageRole',
  description: 'Who a message is from.',
  valuesMap: {
    USER: { description: 'The person using the chat.' },
    ASSISTANT: { description: 'The assistant or agent.' },
    SYSTEM: { description: 'A system prompt or instruction.' },
    TOOL: { description: 'The result of a tool call.' },
  },
});
