// PostGraphile 5 over the `peer` schema of DATABASE_URL (see bench/peer.js), printing the same
// ready line as Scribe so that startServer() runs it. The bench's peer: what a team gets when it
// generates a GraphQL API from the table instead of running Scribe.

// PostGraphile 5 calls Promise.withResolvers, which Node 20 lacks (it came in Node 22).
if (!Promise.withResolvers) {
  Promise.withResolvers = function withResolvers() {
    let resolve;
    let reject;
    const promise = new this((onResolve, onReject) => {
      resolve = onResolve;
      reject = onReject;
    });
    return { promise, resolve, reject };
  };
}

const { createServer } = await import('node:http');
const { postgraphile } = await import('postgraphile');
const { PostGraphileAmberPreset } = await import('postgraphile/presets/amber');
const { makePgService } = await import('postgraphile/adaptors/pg');
const { grafserv } = await import('postgraphile/grafserv/node');

const pgl = postgraphile({
  extends: [PostGraphileAmberPreset],
  pgServices: [makePgService({ connectionString: process.env.DATABASE_URL, schemas: ['peer'] })],
  grafserv: { watch: false, graphiql: false },
});
const server = createServer();
pgl.createServ(grafserv).addTo(server);
// As Scribe's: the load's keep-alive connections stay open between requests.
server.keepAliveTimeout = 65_000;
await pgl.getSchema();
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`GraphQL API ready at http://127.0.0.1:${server.address().port}/graphql`);
});
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => Promise.resolve(pgl.release()).then(() => process.exit(0)));
});
