import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { GraphQLSchemaBuilderModule, GraphQLSchemaFactory } from '@nestjs/graphql';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { writeFileSync } from 'node:fs';
import { SCHEMA_RESOLVERS } from '../graphql-resolvers.js';
import { describeError } from '../common/errors/describe-error.js';
import { undescribedElements } from '../common/graphql/undescribed.js';

/**
 * Writes the code-first schema as SDL to the path given (default `schema.gql`), without a
 * database or a server: `npm run schema` regenerates it, and CI fails when that changes it, or
 * when any type, field, argument or enum value has no description.
 */
async function generate(target: string): Promise<void> {
  const app = await NestFactory.create(GraphQLSchemaBuilderModule, { logger: false });
  await app.init();
  const schema = await app.get(GraphQLSchemaFactory).create(SCHEMA_RESOLVERS);
  const undescribed = undescribedElements(schema);
  if (undescribed.length > 0) {
    throw new Error(`${undescribed.length} undescribed: ${undescribed.join(', ')}`);
  }
  const header = '# Generated from the code-first types by `npm run schema`. Do not edit.\n\n';
  writeFileSync(target, header + printSchema(lexicographicSortSchema(schema)) + '\n');
  await app.close();
}

generate(process.argv[2] ?? 'schema.gql').catch((error: unknown) => {
  process.stderr.write(`schema generation failed: ${describeError(error)}\n`);
  process.exit(1);
});
