import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// Imports run one way: message/ at the bottom (it imports nothing of Scribe's); config/,
// common/ and metrics/ beside it; database/ above them, the only folder that knows TypeORM and
// the drivers, naming no feature; the features above that, none importing another (health/, the
// probes, reads the journal as transcript/ does, and the write path's state through database/
// and common/); the composition root (src/*.ts) on top.
const ENV_MESSAGE =
  'read configuration from ScribeConfig; only src/config/scribe-options-from-environment.ts reads the environment';
const ENV_READERS = [
  'src/config/scribe-options-from-environment.ts',
  'src/main.ts',
  'src/bin/scribe.ts',
  'src/data-source.ts',
];
const ENV_SYNTAX = [
  { selector: "MemberExpression[object.name='process'][computed=true]", message: ENV_MESSAGE },
  {
    selector: "VariableDeclarator[init.name='process'] > ObjectPattern > Property[key.name='env']",
    message: ENV_MESSAGE,
  },
  {
    selector:
      "ImportDeclaration[source.value=/^(node:)?process$/] ImportSpecifier[imported.name='env']",
    message: ENV_MESSAGE,
  },
];
// A client-visible code written as a string (`code: 'NOT_FOUND'`) in src/ outside common/errors/,
// specs included: each is a member of ScribeErrorCode, whose values are the wire codes (Apollo's
// own are in its ApolloServerErrorCode). The e2e specs under test/ pin the wire as clients read
// it, in literals. Not the codes a driver, the OS or Node set on an Error (`SQLITE_FULL`,
// `SCRIBE_SQLITE_WRITER_LOST`, errno's `ENOSPC`, Node's `ERR_…`), which a fake or a wrapper
// may write out: those are no wire code.
const WIRE_CODE_SYNTAX = {
  selector:
    "Property[key.name='code'][value.type='Literal'][value.value=/^(?!SQLITE_|SCRIBE_SQLITE_|ERR_|E[A-Z]+$)[A-Z][A-Z_]+$/]",
  message:
    "a wire code is a member of ScribeErrorCode (src/common/errors/scribe-error-code.ts), or of ApolloServerErrorCode for Apollo's own: not a string",
};
const FEATURES = ['session', 'transcript', 'spool', 'live', 'health', 'export'];
const DRIVERS = ['typeorm', '@nestjs/typeorm', 'sqlite3', 'pg'];
const otherFeatures = (own) => FEATURES.filter((feature) => feature !== own);
const LAYERS = [
  {
    folder: 'message',
    refused: ['config', 'common', 'metrics', 'database', ...FEATURES].map(
      (name) => `**/${name}/**`,
    ),
    why: 'message/ imports nothing of Scribe',
  },
  ...['config', 'common', 'metrics'].map((folder) => ({
    folder,
    refused: ['database', ...FEATURES].map((name) => `**/${name}/**`),
    why: `${folder}/ imports neither the database layer nor a feature`,
  })),
  {
    folder: 'database',
    refused: FEATURES.map((name) => `**/${name}/**`),
    why: 'database/ names no feature',
  },
  {
    // The journal sits under the write path: transcript/ uses it, never the other way round.
    folder: 'spool',
    refused: ['database', ...otherFeatures('spool')].map((name) => `**/${name}/**`),
    why: 'spool/ imports only message/, config/, common/ and metrics/',
  },
  {
    folder: 'transcript',
    refused: otherFeatures('transcript')
      .filter((name) => name !== 'spool')
      .map((name) => `**/${name}/**`),
    why: 'transcript/ imports no feature but the spool it writes to',
  },
  {
    // The probes read the database through DatabaseHealth (its heartbeat included) and whether
    // appends are accepted through AppendIntake (common/lifecycle/), never the write path.
    folder: 'health',
    refused: otherFeatures('health')
      .filter((name) => name !== 'spool')
      .map((name) => `**/${name}/**`),
    why: 'health/ imports no feature but the spool it probes: the write path through database/ and common/',
  },
  {
    folder: 'live',
    refused: otherFeatures('live').map((name) => `**/${name}/**`),
    why: 'live/ imports no other feature: it hears of commits through database/',
  },
  {
    folder: 'session',
    refused: otherFeatures('session').map((name) => `**/${name}/**`),
    why: 'session/ imports neither the write path nor the spool',
  },
  {
    // An export reads what is stored, through database/ as session/ does, without session/.
    folder: 'export',
    refused: otherFeatures('export').map((name) => `**/${name}/**`),
    why: 'export/ imports no other feature: it reads stored transcripts through database/',
  },
];

function layerRules({ folder, refused, why }, allowedDrivers = []) {
  const paths =
    folder === 'database'
      ? []
      : DRIVERS.filter((name) => !allowedDrivers.includes(name)).map((name) => ({
          name,
          message: 'only src/database/ talks to the database',
        }));
  return {
    files: [`src/${folder}/**/*.ts`],
    rules: {
      'no-restricted-imports': ['error', { paths, patterns: [{ group: refused, message: why }] }],
    },
  };
}

export default tseslint.config(
  // examples/ are separate projects, built and tested against the packed tarball (.ci/host-app).
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'data/', 'examples/'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  prettier,
  {
    languageOptions: {
      globals: { ...globals.node, ...globals.jest },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      'no-console': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  ...LAYERS.map((layer) => layerRules(layer)),
  {
    // The journal's owner lock takes a POSIX lock through SQLite (see owner-lock.ts): the one
    // file outside database/ that may load the driver, and it opens no Scribe database.
    ...layerRules(
      LAYERS.find((layer) => layer.folder === 'spool'),
      ['sqlite3'],
    ),
    files: ['src/spool/owner-lock.ts'],
  },
  {
    // The other folders (scripts/, and the composition root) may use any feature, but not the
    // drivers.
    files: ['src/scripts/**/*.ts', 'src/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: DRIVERS.map((name) => ({
            name,
            message: 'only src/database/ talks to the database',
          })),
        },
      ],
    },
  },
  {
    // Environment variables are read in one place, the adapter that turns them into
    // ScribeOptions, and by main.ts that hands them to it: a module configured by its host must
    // not quietly read the host's environment behind its options.
    files: ['src/**/*.ts'],
    // The adapter, and the entry points of a process (npm start's, the `scribe` bin's, and the
    // TypeORM CLI's DataSource for the migration scripts).
    ignores: ENV_READERS,
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: ENV_MESSAGE },
      ],
      'no-restricted-syntax': ['error', ...ENV_SYNTAX, WIRE_CODE_SYNTAX],
    },
  },
  {
    // (A later block's no-restricted-syntax replaces an earlier one's: each block names all.)
    files: ENV_READERS,
    rules: { 'no-restricted-syntax': ['error', WIRE_CODE_SYNTAX] },
  },
  {
    // Where the wire codes are written out: the enum, the GraphQL error formatting beside it,
    // and their specs (an enum value changed by mistake would change a spec written with the
    // enum along with it; test/'s e2e specs, written in literals, would catch it too).
    files: ['src/common/errors/**/*.ts'],
    rules: { 'no-restricted-syntax': ['error', ...ENV_SYNTAX] },
  },
  {
    // The admin console's client runs in a browser.
    files: ['console/**/*.ts'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The benchmark is a command-line tool: printing its figures is its job.
    files: ['bench/**/*.js'],
    rules: { 'no-console': 'off' },
  },
  {
    files: ['test/**/*.ts', 'src/**/*.spec.ts', 'bench/**/*.ts'],
    rules: {
      // GraphQL answers are untyped JSON; tests read them as such.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
