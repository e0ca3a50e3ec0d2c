import { Browser, expectJson, outboxEvents, type TestDialect, testDialects } from '@idt/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { refusedByUpstream, signInThroughUpstream, useDownstreamIdt } from './support/downstream-idt.js';
import { begin, expectErrorPage, handleOf, verifyDomain } from './support/sign-in.js';
import { servicesOf } from './support/sso-instance.js';
import { DOWNSTREAM, DOWNSTREAM_CALLBACK, signInAtUpstream, upstreamOidcOf, useUpstreamIdt } from './support/upstream-idt.js';

const EMAIL = 'grace@alpha.example';

const upstream = useUpstreamIdt([EMAIL]);

describe.each(testDialects())('OpenID Connect sign-in round trip through a second idt on %s', (dialect: TestDialect) => {
  const downstream = useDownstreamIdt(dialect);
  let connectionId: string;
  let counter = 0;
  const uid = () => `oidc-${dialect}-${++counter}`;
  const callbackPath = (url: URL) => `${url.pathname}${url.search}`;

  beforeAll(async () => {
    const { call, dns, world } = downstream;
    const a = world.a;
    connectionId = (
      await expectJson(
        await call('POST', `/v1/identity/organizations/${a.organization.id}/sso/connections`, {
          token: a.tokens.admin,
          body: {
            kind: 'oidc',
            name: 'Alpha idt',
            enabled: true,
            oidc: upstreamOidcOf(upstream),
            defaultRole: 'manager',
          },
        }),
        201,
      )
    ).id;
    await verifyDomain(call, dns, a.organization.id, a.tokens.admin, 'alpha.example');
  });

  it('begins, comes back through the callback, and creates the user just in time with the default role', async () => {
    const { server, world } = downstream;
    const interaction = uid();
    const url = new URL(await begin(server, connectionId, interaction, EMAIL));
    expect(url.origin).toBe(upstream.server.origin);
    expect(url.searchParams.get('login_hint')).toBe(EMAIL);
    expect(url.searchParams.get('redirect_uri')).toBe(DOWNSTREAM_CALLBACK);
    const callback = await signInAtUpstream(url.href, new Browser(), EMAIL);
    expect(callback.origin).toBe(DOWNSTREAM);

    const response = await server.fetch(callbackPath(callback), { redirect: 'manual' });
    const handle = await handleOf(response, interaction);
    const outcome = await servicesOf(server).federation.consume(handle, interaction);
    expect(outcome).toMatchObject({ kind: 'signed-in', organizationId: world.a.organization.id });
    if (outcome.kind !== 'signed-in') throw new Error('not signed in');
    // amr: only RFC 8176 values the upstream asserted.
    expect(outcome.amr.every((value) => ['pwd', 'mfa', 'otp', 'hwk', 'swk', 'user'].includes(value))).toBe(true);
    const user = await server.database.db('identity_users').where({ id: outcome.userId }).first();
    // The upstream did not verify the self-registered address; Alpha verified its domain.
    expect(user).toMatchObject({ email: EMAIL, password_hash: null });
    expect(Boolean(user.email_verified)).toBe(true);
    const roles = await server.database
      .db('identity_memberships as m')
      .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
      .where({ 'm.user_id': outcome.userId })
      .select('m.organization_id', 'm.status', 'r.role');
    expect(roles).toEqual([{ organization_id: world.a.organization.id, status: 'active', role: 'manager' }]);
    expect((await outboxEvents(server.database.db, 'UserSignedInWithSsoEvent')).at(-1)).toMatchObject({
      userId: outcome.userId,
      kind: 'oidc',
      path: 'provisioned',
      roles: ['manager'],
    });

    // The same callback again: its transaction is gone.
    await expectErrorPage(await server.fetch(callbackPath(callback), { redirect: 'manual' }));

    // A second sign-in finds the identity.
    const next = await signInThroughUpstream(server, connectionId, uid(), EMAIL);
    expect(next).toMatchObject({ kind: 'signed-in', userId: outcome.userId });
  });

  it('turns an upstream refusal into a failed outcome, and answers the page for unknown, missing or expired states', async () => {
    const { server, world } = downstream;
    expect(await refusedByUpstream(server, connectionId, uid())).toEqual({
      kind: 'failed',
      reason: 'denied',
      organizationName: world.a.organization.name,
      connectionName: 'Alpha idt',
      // Recorded on the audit trail by the callback (`sso.signIn.failed`): the sign-in pages record nothing more.
      audited: true,
    });

    await expectErrorPage(await server.fetch('/sso/oidc/callback?state=forged&code=x', { redirect: 'manual' }));
    await expectErrorPage(await server.fetch('/sso/oidc/callback', { redirect: 'manual' }));

    const late = uid();
    const lateState = new URL(await begin(server, connectionId, late)).searchParams.get('state') ?? '';
    server.clock.advance(11 * 60_000);
    await expectErrorPage(await server.fetch(`/sso/oidc/callback?state=${lateState}&code=whatever`, { redirect: 'manual' }));
  });

  it('answers unavailable when the upstream cannot be discovered, and disabled for an unknown connection', async () => {
    const { call, server, world } = downstream;
    const a = world.a;
    const broken = await expectJson(
      await call('POST', `/v1/identity/organizations/${a.organization.id}/sso/connections`, {
        token: a.tokens.admin,
        body: {
          kind: 'oidc',
          name: 'Gone',
          enabled: true,
          oidc: { issuer: 'http://127.0.0.1:9/nothing-here', clientId: 'x', clientSecret: 'y' },
        },
      }),
      201,
    );
    const start = await servicesOf(server).federation.begin(broken.id, {
      interactionUid: 'u',
      returnPath: '/interaction/u/federated',
    });
    expect(start).toMatchObject({ kind: 'failed', reason: 'unavailable', connectionName: 'Gone' });
    expect(
      await servicesOf(server).federation.begin('00000000-0000-4000-8000-000000000000', {
        interactionUid: 'u',
        returnPath: '/interaction/u/federated',
      }),
    ).toMatchObject({ kind: 'failed', reason: 'disabled' });
    expect(
      await servicesOf(server).federation.begin(connectionId, { interactionUid: 'u', returnPath: 'https://evil.example/x' }),
    ).toMatchObject({ kind: 'failed', reason: 'invalid' });
  });
});
