import { buildSchema, execute, parse, type GraphQLResolveInfo } from 'graphql';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { encodeCursor } from '../common/pagination/cursor.js';
import { formatOrderKey } from '../message/order-key.js';
import { createValidationPipe } from '../common/validation/validation.pipe.js';
import { checkMessagesArgs, messagePageRequest } from './message-page-args.js';
import { fieldSelections, selectsField } from './selections.js';

const schema = buildSchema(`
  type Page { totalCount: Int }
  type Session { id: ID, title: String, messages(first: Int, last: Int, after: String, before: String): Page }
  type Query { session: Session, count: Int }
`);

/** The resolve info of `session` in `query`, as the executor hands it to the resolver. */
function infoOf(query: string, variables: Record<string, unknown> = {}): GraphQLResolveInfo {
  let captured: GraphQLResolveInfo | undefined;
  void execute({
    schema,
    document: parse(query),
    variableValues: variables,
    rootValue: {
      session: (_args: unknown, _context: unknown, info: GraphQLResolveInfo) => {
        captured = info;
        return null;
      },
    },
  });
  if (!captured) throw new Error('session was not resolved');
  return captured;
}

const pipe = createValidationPipe();
const check = (query: string, variables?: Record<string, unknown>) =>
  checkMessagesArgs(infoOf(query, variables), pipe);
const refusal = (field: string, reason: RegExp) =>
  expect.objectContaining({
    code: ScribeErrorCode.BadUserInput,
    field,
    message: expect.stringMatching(new RegExp(`^${field}: ${reason.source}`)),
  });

describe(checkMessagesArgs.name, () => {
  const key = formatOrderKey(1_700_000_000_000, 1, 'aaaa');

  it('lets good arguments, no arguments, and no messages at all through', async () => {
    await expect(check(`{ session { id } }`)).resolves.toBeUndefined();
    await expect(check(`{ session { messages { totalCount } } }`)).resolves.toBeUndefined();
    await expect(
      check(`{ session { messages(last: 5, before: "${encodeCursor(key)}") { totalCount } } }`),
    ).resolves.toBeUndefined();
  });

  it('refuses counts out of range, as the global pipe does', async () => {
    await expect(check(`{ session { messages(first: 0) { totalCount } } }`)).rejects.toEqual(
      refusal('first', /must not be less than 1/),
    );
    await expect(check(`{ session { messages(last: 1001) { totalCount } } }`)).rejects.toEqual(
      refusal('last', /must not be greater than 1000/),
    );
  });

  it('refuses both counts, and cursors this list never gave, either way', async () => {
    await expect(
      check(`{ session { messages(first: 1, last: 1) { totalCount } } }`),
    ).rejects.toEqual(refusal('last', /cannot be given with first/));
    await expect(check(`{ session { messages(after: "!!!") { totalCount } } }`)).rejects.toEqual(
      refusal('after', /is not a cursor returned by this API/),
    );
    await expect(
      check(`{ session { messages(before: "${encodeCursor('nope')}") { totalCount } } }`),
    ).rejects.toEqual(refusal('before', /is not a cursor of this list/));
  });

  it('reads the arguments from variables, and checks every selection of messages', async () => {
    await expect(
      check(`query($n: Int) { session { messages(first: $n) { totalCount } } }`, { n: -1 }),
    ).rejects.toEqual(refusal('first', /must not be less than 1/));
    await expect(
      check(
        `{ session { a: messages(first: 1) { totalCount } ...f } } fragment f on Session { b: messages(first: -2) { totalCount } }`,
      ),
    ).rejects.toEqual(refusal('first', /must not be less than 1/));
    await expect(
      check(`{ session { ... on Session { messages(last: 0) { totalCount } } } }`),
    ).rejects.toEqual(refusal('last', /must not be less than 1/));
  });

  it('leaves alone a selection the executor will skip', async () => {
    await expect(
      check(`{ session { messages(first: 0) @skip(if: true) { totalCount } } }`),
    ).resolves.toBeUndefined();
    await expect(
      check(`{ session { messages(first: 0) @include(if: false) { totalCount } } }`),
    ).resolves.toBeUndefined();
    await expect(
      check(
        `{ session { ...f @skip(if: true) } } fragment f on Session { messages(first: 0) { totalCount } }`,
      ),
    ).resolves.toBeUndefined();
  });
});

describe(messagePageRequest.name, () => {
  it('decodes both cursors to order keys', () => {
    const key = formatOrderKey(1_700_000_000_000, 1, 'aaaa');
    expect(
      messagePageRequest({ last: 2, before: encodeCursor(key), after: encodeCursor(`${key}#7`) }),
    ).toEqual({ direction: 'backward', count: 2, before: key, after: key });
  });
});

describe(fieldSelections.name, () => {
  it('finds the named field through fragments, and only directly under the field', () => {
    const info = infoOf(
      `{ session { title x: title ...f ... on Session { title @include(if: true) } } } fragment f on Session { title messages { totalCount } }`,
    );
    expect(fieldSelections(info, 'title').map((node) => node.alias?.value ?? 'title')).toEqual([
      'title',
      'x',
      'title',
      'title',
    ]);
    expect(fieldSelections(info, 'totalCount')).toEqual([]);
    expect(selectsField(info, 'messages')).toBe(true);
    expect(selectsField(info, 'id')).toBe(false);
  });

  it('skips a fragment the document does not define', () => {
    const info = infoOf(`{ session { id } }`);
    const withUnknown = {
      ...info,
      fieldNodes: parse(`{ session { ...missing } }`).definitions.flatMap((d) =>
        'selectionSet' in d ? (d.selectionSet.selections as never) : [],
      ),
    };
    expect(fieldSelections(withUnknown, 'id')).toEqual([]);
  });
});
