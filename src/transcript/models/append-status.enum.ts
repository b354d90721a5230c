// Registered for the schema with the Message model, which carries it too.
export { AppendStatus } from '../../common/graphql/models/append-status.enum.js';
