import { registerEnumType } from '@nestjs/graphql';

export enum MessageRole {
  USER = 'USER',
  ASSISTANT = 'ASSISTANT',
  SYSTEM = 'SYSTEM',
  TOOL = 'TOOL',
}

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
