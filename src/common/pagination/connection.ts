import { type Type } from '@nestjs/common';
import { Field, Int, ObjectType } from '@nestjs/graphql';
import { FieldScope } from '../auth/field-scope.js';
import { encodeCursor } from './cursor.js';
import { PageInfo } from './page-info.model.js';
import { type Page } from './page-request.js';

export interface Edge<T> {
  cursor: string;
  node: T;
}

export interface Connection<T> {
  edges: Edge<T>[];
  pageInfo: PageInfo;
  totalCount: number;
}

/** Builds the Relay edge type for `nodeType`, named `<name>Edge`. */
export function EdgeType<T>(nodeType: Type<T>, name: string): Type<Edge<T>> {
  // Cursors name stored items, and counts count them.
  @FieldScope('read')
  @ObjectType(`${name}Edge`, {
    description: `One ${name.toLowerCase()} in a page, with its cursor.`,
  })
  class EdgeClass {
    @Field({
      description:
        'Opaque cursor of this item; pass it as `after` to continue after it, or as `before` to page back from it.',
    })
    cursor: string;

    @Field(() => nodeType, { description: `The ${name.toLowerCase()}.` })
    node: T;
  }
  return EdgeClass;
}

/**
 * Builds the Relay connection type for `nodeType`, named `<name>Connection`, whose edges are
 * `edgeType` (built here, named `<name>Edge`, unless given).
 */
export function ConnectionType<T>(
  nodeType: Type<T>,
  name: string,
  edgeType: Type<Edge<T>> = EdgeType(nodeType, name),
): Type<Connection<T>> {
  @FieldScope('read')
  @ObjectType(`${name}Connection`, { description: `A page of ${name.toLowerCase()}s.` })
  class ConnectionClass {
    @Field(() => [edgeType], { description: 'The items of this page, in order.' })
    edges: Edge<T>[];

    @Field(() => PageInfo, { description: 'Where this page sits in the whole list.' })
    pageInfo: PageInfo;

    @Field(() => Int, { description: 'How many items the whole list holds.' })
    totalCount: number;
  }
  return ConnectionClass;
}

/**
 * Turns `first + 1` rows fetched after a cursor into a page: the extra row only says whether
 * another page follows. `hasPreviousPage` is the caller's: whether anything precedes the cursor.
 */
export function toConnection<Row, Node>(
  rows: Row[],
  first: number,
  hasPreviousPage: boolean,
  totalCount: number,
  keyOf: (row: Row) => string,
  toNode: (row: Row) => Node,
): Connection<Node> {
  return pageConnection(
    { items: rows.slice(0, first), hasNextPage: rows.length > first, hasPreviousPage },
    totalCount,
    keyOf,
    toNode,
  );
}

/** The connection of a page whose items, and what lies either side of it, are known. */
export function pageConnection<Row, Node>(
  page: Page<Row>,
  totalCount: number,
  keyOf: (row: Row) => string,
  toNode: (row: Row) => Node,
): Connection<Node> {
  const edges = page.items.map((row) => ({ cursor: encodeCursor(keyOf(row)), node: toNode(row) }));
  return {
    edges,
    pageInfo: {
      hasNextPage: page.hasNextPage,
      hasPreviousPage: page.hasPreviousPage,
      startCursor: edges.length > 0 ? edges[0].cursor : null,
      endCursor: edges.length > 0 ? edges[edges.length - 1].cursor : null,
    },
    totalCount,
  };
}
