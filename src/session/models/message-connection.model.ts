import { ConnectionType } from '../../common/pagination/connection.js';
import { Message } from '../../transcript/models/message.model.js';

export const MessageConnection = ConnectionType(Message, 'Message');
