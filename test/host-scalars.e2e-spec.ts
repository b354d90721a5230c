import { Module } from '@nestjs/common';
import { Field, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { GraphQLDateTime, GraphQLJSON } from 'graphql-scalars';
import { createScribeTestingModule, type ScribeTesting } from '../src/kit/index.js';
import { hostGraphQLModule } from './support/host-graphql.js';

// Scribe's types use graphql-scalars' DateTime and JSON. A host's schema is one with Scribe's
// in 'host' mode, and a GraphQL schema holds one type of a name: a host that types its own
// fields with the same graphql-scalars objects must start, and each side's values must read
// as before. (A scalar of Scribe's own named DateTime once broke exactly this.)

@ObjectType()
class HostEvent {
  @Field(() => GraphQLDateTime)
  at!: Date;

  @Field(() => GraphQLJSON)
  detail!: unknown;
}

@Resolver()
class HostResolver {
  @Query(() => HostEvent)
  hostEvent(): HostEvent {
    return { at: new Date(0), detail: { kind: 'host' } };
  }
}

@Module({ providers: [HostResolver] })
class HostModule {}

describe("a host whose fields use graphql-scalars' DateTime and JSON, with Scribe's", () => {
  let sut: ScribeTesting;

  beforeAll(async () => {
    sut = await createScribeTestingModule({
      imports: [HostModule, hostGraphQLModule()],
      graphql: { mode: 'host' },
    });
  });

  afterAll(async () => {
    await sut?.close();
  });

  it("starts, and answers the host's field and Scribe's in one schema", async () => {
    const host = await sut.gql('{ hostEvent { at detail } }');
    expect(host.errors).toBeUndefined();
    expect(host.data).toEqual({
      hostEvent: { at: '1970-01-01T00:00:00.000Z', detail: { kind: 'host' } },
    });

    const appended = await sut.gql<{
      appendMessage: { message: { createdAt: string; metadata: unknown } };
    }>(
      `mutation($input: AppendMessageInput!) {
        appendMessage(input: $input) { message { createdAt metadata } }
      }`,
      { input: { sessionId: 'host-scalars', role: 'USER', content: 'hi', metadata: { a: 1 } } },
    );
    expect(appended.errors).toBeUndefined();
    const message = appended.data!.appendMessage.message;
    expect(message.metadata).toEqual({ a: 1 });
    expect(new Date(message.createdAt).toISOString()).toBe(message.createdAt);
  });
});
