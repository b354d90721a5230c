// The limit under Scribe's writes, whatever the driver: message rows inserted into the schema
// the server migrated in multi-row statements inside large transactions, with nothing of
// Scribe's around them. raw-sqlite.js and raw-postgres.js give it a connection.

const COLUMNS =
  '"id", "session_id", "order_key", "role", "content", "client_message_id", "accepted_at", "stored_at"';

/**
 * Rows per second `records` (message records) go in through `execute(sql, values)`, one
 * connection, `rowsPerTransaction` to a transaction (their sessions created first) and
 * `rowsPerStatement` to an INSERT. Tool fields and `stored_at` are literals, as Scribe writes
 * them when no row has any.
 */
export async function insertRate(
  execute,
  dialect,
  records,
  { rowsPerStatement = 2000, rowsPerTransaction = 10_000 } = {},
) {
  const marks = (rows, columns, literals) => {
    let index = 0;
    const mark = () => (dialect === 'postgres' ? `$${++index}` : '?');
    return Array.from(
      { length: rows },
      () => `(${Array.from({ length: columns }, mark).join(', ')}${literals})`,
    ).join(', ');
  };
  const started = performance.now();
  for (let start = 0; start < records.length; start += rowsPerTransaction) {
    const transaction = records.slice(start, start + rowsPerTransaction);
    await execute(dialect === 'postgres' ? 'BEGIN' : 'BEGIN IMMEDIATE', []);
    const sessions = [...new Set(transaction.map((record) => record.sessionId))];
    await execute(
      `INSERT INTO "sessions" ("id", "created_at", "updated_at") VALUES ${marks(sessions.length, 1, ', 0, 0')} ON CONFLICT DO NOTHING`,
      sessions,
    );
    for (let first = 0; first < transaction.length; first += rowsPerStatement) {
      const chunk = transaction.slice(first, first + rowsPerStatement);
      const values = [];
      for (const r of chunk) {
        values.push(
          r.id,
          r.sessionId,
          r.orderKey,
          r.role,
          r.content,
          r.clientMessageId,
          r.acceptedAt,
        );
      }
      await execute(
        `INSERT INTO "messages" (${COLUMNS}) VALUES ${marks(chunk.length, 7, ', 0')}`,
        values,
      );
    }
    await execute('COMMIT', []);
  }
  return records.length / ((performance.now() - started) / 1000);
}

/**
 * Message records as `clients` chat clients send them in batches of `batch`: client after
 * client, `message ${i} of client ${c}` in session `${prefix}${c}`, with the order keys and
 * ids Scribe gives messages without a client id (its own functions, so that the driver inserts
 * the rows Scribe would). `take(count)` hands out the next ones.
 */
export async function chatRecords({ clients, batch, prefix }) {
  const { OrderKeyGenerator } = await import('../dist/message/order-key.js');
  const { messageIdFor } = await import('../dist/message/message-id.js');
  const keys = new OrderKeyGenerator();
  let n = 0;
  const record = () => {
    const request = Math.floor(n / batch);
    const client = request % clients;
    const i = Math.floor(request / clients) * batch + (n % batch);
    n += 1;
    const { key, ms } = keys.next();
    return {
      id: messageIdFor(`${prefix}${client}`, null),
      sessionId: `${prefix}${client}`,
      orderKey: key,
      role: 'USER',
      content: `message ${i} of client ${client}`,
      clientMessageId: null,
      acceptedAt: ms,
    };
  };
  return { take: (count) => Array.from({ length: count }, record) };
}
