import { ConnectionType } from '../../common/pagination/connection.js';
import { Message } from '../../common/graphql/models/message.model.js';

export const MessageConnection = ConnectionType(Message, 'Message');
