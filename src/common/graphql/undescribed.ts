import {
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isIntrospectionType,
  isObjectType,
  isSpecifiedScalarType,
  type GraphQLSchema,
} from 'graphql';

/** The root operation types: their fields are the API's entry points, described one by one. */
const ROOT_TYPES = new Set(['Query', 'Mutation', 'Subscription']);

const described = (text: string | null | undefined) => (text ?? '').trim() !== '';

/**
 * Every element of the schema that a client reads in its documentation and has no
 * description: types (the roots and GraphQL's own aside), fields, arguments, input fields and
 * enum values, each named by its coordinate (`Type.field(argument:)`). The schema check fails
 * on any, so a new field cannot reach `schema.gql` undocumented.
 */
export function undescribedElements(schema: GraphQLSchema): string[] {
  const missing: string[] = [];
  const check = (text: string | null | undefined, coordinate: string) => {
    if (!described(text)) missing.push(coordinate);
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (isIntrospectionType(type) || isSpecifiedScalarType(type)) continue;
    if (!ROOT_TYPES.has(type.name)) check(type.description, type.name);
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        check(field.description, `${type.name}.${field.name}`);
        for (const argument of field.args) {
          check(argument.description, `${type.name}.${field.name}(${argument.name}:)`);
        }
      }
    } else if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) {
        check(field.description, `${type.name}.${field.name}`);
      }
    } else if (isEnumType(type)) {
      for (const value of type.getValues()) check(value.description, `${type.name}.${value.name}`);
    }
  }
  return missing.sort();
}
