import { unknownMigrations } from './schema-migrations.js';

describe(unknownMigrations.name, () => {
  const known = ['Initial1', 'Heartbeat2', 'Identity3'];

  it('finds none in a database this code migrated, or one it has not migrated fully', () => {
    expect(unknownMigrations([], known)).toEqual([]);
    expect(unknownMigrations(['Initial1'], known)).toEqual([]);
    expect(unknownMigrations(known, known)).toEqual([]);
  });

  it('names each recorded migration this code does not know, in recorded order', () => {
    expect(unknownMigrations([...known, 'Later5', 'Later4'], known)).toEqual(['Later5', 'Later4']);
  });
});
