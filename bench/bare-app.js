// The floor under Scribe's `{ __typename }`: NestJS on the same Express platform with Apollo
// and one schema-first resolver, none of Scribe's extras (body checks, refusal budget,
// authentication, complexity limits, metrics, the database). Plain JavaScript, no decorators.
// Started by the bench as a process of its own; prints its URL as Scribe does.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import { ApolloDriver } from '@nestjs/apollo';

class BareModule {}
Module({
  imports: [
    GraphQLModule.forRoot({
      driver: ApolloDriver,
      typeDefs: 'type Query { hello: String }',
      resolvers: { Query: { hello: () => 'hi' } },
    }),
  ],
})(BareModule);

const app = await NestFactory.create(BareModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
const url = (await app.getUrl()).replace('[::1]', 'localhost');
console.log(`GraphQL API ready at ${url}/graphql`);
