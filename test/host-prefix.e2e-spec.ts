import { Module } from '@nestjs/common';
import { Args, Context, Int, Mutation, Query, Resolver } from '@nestjs/graphql';
import { JwtService } from '@nestjs/jwt';
import { createScribeTestingModule, type ScribeTesting } from '../src/kit/index.js';
import { hostGraphQLModule } from './support/host-graphql.js';

// In host mode the GraphQL context is the host's. A host that keeps a `principal` of its own
// there, and writes it while Scribe's fields run, must neither widen what a session_prefix
// token lists nor find Scribe's caller in its place (found by a stranger's attack: Scribe
// kept its caller on the context under that name, and trusted whatever was there).
const SECRET = 'host-prefix-secret-of-32-bytes!!';
const jwt = new JwtService();
const U1 = {
  authorization: `Bearer ${jwt.sign({ sub: 'u1', scope: 'read append', session_prefix: 'u1-' }, { secret: SECRET, expiresIn: 300 })}`,
};
const ADMIN = { authorization: 'Bearer ops' };

interface HostContext {
  principal?: unknown;
}

@Resolver()
class HostResolver {
  @Mutation(() => String)
  hostWhoAmI(@Context() context: HostContext): string {
    return JSON.stringify(context.principal);
  }

  /** Memoises the host's user on the context after `turns` awaits, as hosts do. */
  @Query(() => String)
  async hostTouch(
    @Args('turns', { type: () => Int }) turns: number,
    @Context() context: HostContext,
  ): Promise<string> {
    for (let turn = 0; turn < turns; turn++) await Promise.resolve();
    context.principal = { hostUser: 'alice' };
    return 'ok';
  }
}

@Module({ providers: [HostResolver] })
class HostModule {}

describe('a session_prefix token in host mode, beside a host that keeps its own principal', () => {
  let sut: ScribeTesting;

  beforeAll(async () => {
    sut = await createScribeTestingModule({
      imports: [
        HostModule,
        hostGraphQLModule({ context: () => ({ principal: { hostUser: 'alice' } }) }),
      ],
      graphql: { mode: 'host' },
      options: { auth: { apiTokens: 'ops=admin', jwtSecret: SECRET } },
    });
    for (const sessionId of ['u1-a', 'u1-b', 'u2-a', 'victim-secret']) {
      const answer = await sut.gql(
        `mutation($id: ID!) { appendMessage(input: { sessionId: $id, role: USER, content: "x" }) { status } }`,
        { id: sessionId },
        ADMIN,
      );
      expect(answer.errors).toBeUndefined();
    }
  });

  afterAll(() => sut?.close());

  it('lists only its own sessions, whenever the host writes its principal', async () => {
    for (let turns = 0; turns < 12; turns++) {
      for (const query of [
        `{ t: hostTouch(turns: ${turns}) sessions(first: 100) { totalCount edges { node { id } } } }`,
        `{ sessions(first: 100) { totalCount edges { node { id } } } t: hostTouch(turns: ${turns}) }`,
      ]) {
        const answer = await sut.gql(query, undefined, U1);
        expect(answer.errors).toBeUndefined();
        expect(answer.data.sessions.totalCount).toBe(2);
        expect(
          answer.data.sessions.edges.map((edge: { node: { id: string } }) => edge.node.id).sort(),
        ).toEqual(['u1-a', 'u1-b']);
      }
    }
  });

  it('leaves the host its own principal after Scribe’s fields ran', async () => {
    const answer = await sut.gql(
      `mutation { appendMessage(input: { sessionId: "u1-c", role: USER, content: "x" }) { status } hostWhoAmI }`,
      undefined,
      U1,
    );
    expect(answer.errors).toBeUndefined();
    expect(JSON.parse(answer.data.hostWhoAmI)).toEqual({ hostUser: 'alice' });
  });
});
