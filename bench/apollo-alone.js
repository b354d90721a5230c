// Apollo Server 5 alone (its standalone HTTP server), one schema-first resolver: the floor of
// the GraphQL server Scribe runs, for the `{ __typename }` floors (floors.js).
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';

const server = new ApolloServer({
  typeDefs: 'type Query { hello: String }',
  resolvers: { Query: { hello: () => 'hi' } },
});
const { url } = await startStandaloneServer(server, {
  listen: { port: Number(process.env.PORT ?? 0), host: '127.0.0.1' },
});
console.log(`GraphQL API ready at ${url.replace(/\/$/, '')}/graphql`);
process.once('SIGTERM', () => server.stop().then(() => process.exit(0)));
