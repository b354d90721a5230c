import { parse } from 'graphql';
import { operationsOf, SCHEMA_WITH_HOST_FIELDS } from '../common/testing/scribe-roots.js';
import { knownOperationLabels, operationLabels } from './operation-labels.js';

const schema = SCHEMA_WITH_HOST_FIELDS;
const labelsOf = (source: string) => operationLabels(schema, operationsOf(parse(source))[0]);

describe(operationLabels.name, () => {
  it.each([
    ['{ session }', 'query', 'session'],
    ['query Anything { s: session __typename }', 'query', 'session'],
    ['mutation { append }', 'mutation', 'append'],
    ['{ session sessions }', 'query', 'other'],
    ['{ hostUser }', 'query', 'other'],
    ['{ ...F } fragment F on Query { session }', 'query', 'other'],
    ['{ __typename }', 'query', 'other'],
    ['mutation { session }', 'mutation', 'other'],
  ])('labels %p as %s %s', (source, type, name) => {
    expect(labelsOf(source)).toEqual({ operation_type: type, operation_name: name });
  });

  it('ignores the name a client gives its operation: free text would be a series each', () => {
    expect(labelsOf('query session_12345 { hostUser }').operation_name).toBe('other');
    expect(labelsOf('query Session { session }').operation_name).toBe('session');
  });

  it('labels a request with no operation (a bad document) unknown', () => {
    expect(operationLabels(schema, undefined)).toEqual({
      operation_type: 'unknown',
      operation_name: 'other',
    });
    expect(operationLabels(undefined, operationsOf(parse('{ session }'))[0]).operation_name).toBe(
      'other',
    );
  });
});

describe(knownOperationLabels.name, () => {
  it("lists each of Scribe's root fields under its type, and other under every type", () => {
    expect(knownOperationLabels(schema)).toEqual([
      { operation_type: 'unknown', operation_name: 'other' },
      { operation_type: 'query', operation_name: 'other' },
      { operation_type: 'query', operation_name: 'session' },
      { operation_type: 'query', operation_name: 'sessions' },
      { operation_type: 'mutation', operation_name: 'other' },
      { operation_type: 'mutation', operation_name: 'append' },
      { operation_type: 'subscription', operation_name: 'other' },
    ]);
  });
});
