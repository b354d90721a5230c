// The floor under Scribe's `{ __typename }`: NestJS on the same Express platform with Apollo
// and one schema-first resolver, none of Scribe's extras (body checks, refusal budget,
// authentication, complexity limits, metrics, the database). Plain JavaScript, no decorators.
// Started by the bench as a process of its own; prints its URL as Scribe does. With
// BARE_PLATFORM=fastify it runs on Nest's Fastify platform instead (Apollo's Fastify
// integration), for the `{ __typename }` floors (floors.js).
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

const options = { logger: ['error', 'warn'] };
const app =
  process.env.BARE_PLATFORM === 'fastify'
    ? await NestFactory.create(
        BareModule,
        // As Scribe's: the load's keep-alive connections stay open between requests.
        new (await import('@nestjs/platform-fastify')).FastifyAdapter({ keepAliveTimeout: 65_000 }),
        options,
      )
    : await NestFactory.create(BareModule, options);
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
const url = (await app.getUrl()).replace('[::1]', 'localhost');
console.log(`GraphQL API ready at ${url}/graphql`);
