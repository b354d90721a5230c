import { ConnectionType, EdgeType } from '../../pagination/connection.js';
import { Message } from './message.model.js';

/** A message with its cursor: an item of a page, and an event of `messageAppended`. */
export const MessageEdge = EdgeType(Message, 'Message');

export const MessageConnection = ConnectionType(Message, 'Message', MessageEdge);
