// bench/bare-app.js on Fastify: NestJS with Apollo and one schema-first resolver, on Nest's
// Fastify platform (Apollo's Fastify integration), for the `{ __typename }` floors (floors.js).
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import { ApolloDriver } from '@nestjs/apollo';
import { FastifyAdapter } from '@nestjs/platform-fastify';

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

// As Scribe's: the load's keep-alive connections stay open between requests.
const adapter = new FastifyAdapter({ keepAliveTimeout: 65_000 });
const app = await NestFactory.create(BareModule, adapter, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
const url = (await app.getUrl()).replace('[::1]', 'localhost');
console.log(`GraphQL API ready at ${url}/graphql`);
