import { Extensions } from '@nestjs/graphql';
import {
  isAbstractType,
  isIntrospectionType,
  isObjectType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
} from 'graphql';
import { type Scope } from '../../config/access-settings.js';

/** The field extension (or type extension, for all its fields) that says who may see a field. */
export const FIELD_SCOPE = 'scribeScope';

/**
 * Who may see a field: `read`, `admin`, or `public` (whoever may run the root field it is
 * reached from: a value the caller sent, or the outcome of its own request).
 */
export type FieldVisibility = Scope | 'public';

/**
 * Declares who may see a field of an object type, wherever the type appears (a query's
 * answer, a mutation's payload, a subscription's event). On a class it covers every field
 * that does not declare its own. A field that declares nothing is refused to everyone.
 */
export const FieldScope = (visibility: FieldVisibility) =>
  Extensions({ [FIELD_SCOPE]: visibility });

const visibilityOf = (extensions: unknown): FieldVisibility | undefined =>
  (extensions as Record<string, FieldVisibility | undefined> | null | undefined)?.[FIELD_SCOPE];

/** What `field` of `type` declares, its own declaration first, then its type's. */
export function declaredVisibility(
  type: GraphQLNamedType,
  field: GraphQLField<unknown, unknown>,
): FieldVisibility | undefined {
  return visibilityOf(field.extensions) ?? visibilityOf(type.extensions);
}

/**
 * `Type.field` for every field of an object type of the API that declares no visibility, root
 * fields included (RequireScope declares theirs); introspection is GraphQL's own.
 */
export function undeclaredFields(schema: GraphQLSchema): string[] {
  const undeclared: string[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (isIntrospectionType(type)) continue;
    if (!isObjectType(type) && !isAbstractType(type)) continue;
    if (isAbstractType(type)) {
      undeclared.push(`${type.name} (an abstract type: FieldScopeCheck does not handle one)`);
      continue;
    }
    for (const field of Object.values(type.getFields())) {
      if (declaredVisibility(type, field) === undefined)
        undeclared.push(`${type.name}.${field.name}`);
    }
  }
  return undeclared;
}
