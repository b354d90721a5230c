/** SQL the same on SQLite and PostgreSQL but for placeholders: which of the two it is for. */
export type Dialect = 'sqlite' | 'postgres';

export interface Statement {
  sql: string;
  values: unknown[];
}

/** `(?, ?), (?, ?)` for SQLite, `($1, $2), ($3, $4)` for PostgreSQL. */
export function rowsOf(
  dialect: Dialect,
  rows: number,
  columns: number,
  row: (marks: string) => string,
): string {
  const groups: string[] = [];
  let index = 0;
  for (let rowIndex = 0; rowIndex < rows; rowIndex++) {
    const marks: string[] = [];
    for (let column = 0; column < columns; column++) {
      index += 1;
      marks.push(dialect === 'postgres' ? `$${index}` : '?');
    }
    groups.push(row(marks.join(', ')));
  }
  return groups.join(', ');
}
