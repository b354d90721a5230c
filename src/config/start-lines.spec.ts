import { startLines } from './start-lines.js';

describe(startLines.name, () => {
  it('names the version, the SQLite file, the journal and the URL', () => {
    expect(
      startLines({
        version: '1.2.3',
        config: {
          database: { kind: 'sqlite', path: '/data/scribe.sqlite', synchronous: 'FULL' },
          spoolDir: '/data/pending_messages',
          graphqlPath: '/graphql',
        },
        url: 'http://[::1]:3000',
      }),
    ).toEqual([
      `Scribe 1.2.3 (Node ${process.version})`,
      'Database: SQLite at /data/scribe.sqlite',
      'Journal: /data/pending_messages',
      'GraphQL API ready at http://localhost:3000/graphql',
    ]);
  });

  it('names the PostgreSQL server and database, never its credentials', () => {
    const lines = startLines({
      version: '1.2.3',
      config: {
        database: { kind: 'postgres', url: 'postgres://scribe:s3cret@db.internal:5432/chat?x=1' },
        spoolDir: '/spool',
        graphqlPath: '/api/graphql',
      },
      url: 'http://127.0.0.1:3000',
    });
    expect(lines[1]).toBe('Database: PostgreSQL at db.internal:5432/chat');
    expect(lines.join('\n')).not.toMatch(/scribe:|s3cret/);
  });
});
