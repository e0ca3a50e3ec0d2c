import {
  expectJson,
  expectProblem,
  outboxEvents,
  seedMembership,
  seedUser,
  type TestIdt,
  testDialects,
  type World,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DnsResponder, startDnsResponder } from './support/dns-responder.js';
import { createTestIdentityProvider, decode, encode, mutate } from './support/saml-idp.js';
import type { TestElement } from './support/xml-dom.js';

const SAML_ASSERTION = 'urn:oasis:names:tc:SAML:2.0:assertion';
const XML_DSIG = 'http://www.w3.org/2000/09/xmldsig#';

import { begin, continuesTo, expectErrorPage, handleOf, verifyDomain } from './support/sign-in.js';
import { servicesOf, startSsoInstance } from './support/sso-instance.js';

const idp = createTestIdentityProvider({ entityId: 'https://idp.alpha.test/metadata', ssoUrl: 'https://idp.alpha.test/sso' });

describe.each(testDialects())('SAML sign-in round trip on %s', (dialect) => {
  let server: TestIdt;
  let world: World;
  let call: Awaited<ReturnType<typeof startSsoInstance>>['call'];
  let dns: DnsResponder;
  let connectionA: string;
  let connectionAUnsolicited: string;
  let connectionB: string;
  let uidCounter = 0;
  const uid = () => `uid-${dialect}-${++uidCounter}`;
  const db = () => server.database.db;
  const federation = () => servicesOf(server).federation;
  const connections = (orgId: string) => `/v1/identity/organizations/${orgId}/sso/connections`;

  async function spMetadata(connectionId: string) {
    return (await server.fetch(`/sso/saml/${connectionId}/metadata`)).text();
  }

  function postAcs(connectionId: string, samlResponse: string, relayState?: string) {
    return server.fetch(`/sso/saml/${connectionId}/acs`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://idp.alpha.test' },
      body: new URLSearchParams({ SAMLResponse: samlResponse, ...(relayState ? { RelayState: relayState } : {}) }).toString(),
    });
  }

  /** SP-initiated: begin, the IdP reads the request and answers, the browser posts to the ACS. */
  async function samlSignIn(options: {
    connectionId?: string;
    nameId: string;
    attributes?: Record<string, string[]>;
    interaction?: string;
  }) {
    const connectionId = options.connectionId ?? connectionA;
    const interaction = options.interaction ?? uid();
    const url = await begin(server, connectionId, interaction);
    const metadata = await spMetadata(connectionId);
    const request = await idp.readRequest(url, metadata);
    const samlResponse = await idp.respond({
      spMetadata: metadata,
      now: server.clock.now(),
      inResponseTo: request.id,
      nameId: options.nameId,
      attributes: options.attributes ?? { email: [options.nameId] },
    });
    const response = await postAcs(connectionId, samlResponse);
    return { response, samlResponse, interaction };
  }

  async function signedIn(options: Parameters<typeof samlSignIn>[0]) {
    const { response, interaction, samlResponse } = await samlSignIn(options);
    const handle = await handleOf(response, interaction);
    return { outcome: await federation().consume(handle, interaction), handle, interaction, samlResponse };
  }

  async function membershipOf(userId: string, organizationId: string) {
    const row = await db()('identity_memberships').where({ user_id: userId, organization_id: organizationId }).first();
    if (!row) return undefined;
    const roles = await db()('identity_membership_roles').where({ membership_id: row.id }).orderBy('role').pluck('role');
    return { status: row.status as string, roles };
  }

  beforeAll(async () => {
    dns = await startDnsResponder();
    ({ server, world, call } = await startSsoInstance({ dialect, env: { IDT_SSO_DNS_SERVERS: dns.server } }));
    const a = world.a;
    const b = world.b;
    const body = {
      kind: 'saml',
      name: 'Alpha Okta',
      enabled: true,
      saml: { metadataXml: idp.metadata },
      roleMapping: [{ group: 'idt-admins', role: 'admin' }],
      defaultRole: 'user',
    };
    connectionA = (await expectJson(await call('POST', connections(a.organization.id), { token: a.tokens.admin, body }), 201)).id;
    connectionAUnsolicited = (
      await expectJson(
        await call('POST', connections(a.organization.id), {
          token: a.tokens.admin,
          body: {
            ...body,
            name: 'Alpha Okta tiles',
            saml: { metadataXml: idp.metadata, allowIdpInitiated: true, defaultRelayState: '/account' },
          },
        }),
        201,
      )
    ).id;
    connectionB = (
      await expectJson(
        await call('POST', connections(b.organization.id), { token: b.tokens.admin, body: { ...body, name: 'Beta Okta' } }),
        201,
      )
    ).id;
    await verifyDomain(call, dns, a.organization.id, a.tokens.admin, 'alpha.example');
    await verifyDomain(call, dns, b.organization.id, b.tokens.admin, 'beta.example');
  });

  afterAll(async () => {
    await server?.close();
    await dns?.close();
  });

  it('routes by verified domain to the organization’s oldest connection, and never to another organization', async () => {
    expect(await federation().identifierFirst()).toBe(true);
    expect(await federation().platformConnections()).toEqual([]);
    expect(await federation().homeRealm('Ada@Alpha.Example')).toEqual({
      connectionId: connectionA,
      organizationId: world.a.organization.id,
      organizationName: world.a.organization.name,
      ssoRequired: false,
    });
    expect((await federation().homeRealm('bob@beta.example'))?.connectionId).toBe(connectionB);
    expect(await federation().homeRealm('eve@gamma.example')).toBeUndefined();
    expect(await federation().homeRealm('sub@eng.alpha.example')).toBeUndefined();
    expect(await federation().homeRealm('not an address')).toBeUndefined();
    expect((await federation().organizationRealm(world.b.organization.id))?.connectionId).toBe(connectionB);
    expect(await federation().organizationRealm(world.platform.id)).toBeUndefined();
  });

  it('creates the user just in time with the mapped role, re-applies roles at every sign-in, and takes a handle once', async () => {
    const email = 'ada@alpha.example';
    const first = await samlSignIn({
      nameId: email,
      attributes: { email: [email], firstName: ['Ada'], lastName: ['Lovelace'], groups: ['idt-admins', 'eng'] },
    });
    const handle = await handleOf(first.response, first.interaction);
    // Bound to the interaction: another one gets nothing and does not spend it.
    expect(await federation().consume(handle, 'another-interaction')).toMatchObject({ kind: 'failed', reason: 'expired' });
    const outcome = await federation().consume(handle, first.interaction);
    expect(outcome).toMatchObject({ kind: 'signed-in', amr: [], organizationId: world.a.organization.id });
    if (outcome.kind !== 'signed-in') throw new Error('not signed in');
    expect(await federation().consume(handle, first.interaction)).toMatchObject({ kind: 'failed', reason: 'expired' });

    const user = await db()('identity_users').where({ id: outcome.userId }).first();
    expect(user).toMatchObject({ email, first_name: 'Ada', last_name: 'Lovelace', password_hash: null, status: 'active' });
    // The domain is verified by the connection's organization.
    expect(Boolean(user.email_verified)).toBe(true);
    expect(await membershipOf(outcome.userId, world.a.organization.id)).toEqual({ status: 'active', roles: ['admin'] });
    expect(await membershipOf(outcome.userId, world.b.organization.id)).toBeUndefined();
    expect(await db()('sso_identities').where({ connection_id: connectionA, subject: email }).first()).toMatchObject({
      user_id: outcome.userId,
    });
    const events = (await outboxEvents(db(), 'UserSignedInWithSsoEvent')).filter((event) => event.userId === outcome.userId);
    expect(events).toEqual([
      expect.objectContaining({
        connectionId: connectionA,
        path: 'provisioned',
        roles: ['admin'],
        kind: 'saml',
        initiatedBy: 'sp',
      }),
    ]);

    // Out of the admin group: the default role, at the next sign-in.
    const again = await signedIn({ nameId: email, attributes: { email: [email], groups: ['eng'] } });
    expect(again.outcome).toMatchObject({ kind: 'signed-in', userId: outcome.userId });
    expect(await membershipOf(outcome.userId, world.a.organization.id)).toEqual({ status: 'active', roles: ['user'] });
    expect((await outboxEvents(db(), 'UserSignedInWithSsoEvent')).at(-1)).toMatchObject({ path: 'returning', roles: ['user'] });
  });

  it('refuses a replayed response and an expired sign-in with the error page, changing nothing', async () => {
    const email = 'replay@alpha.example';
    const { outcome, samlResponse } = await signedIn({ nameId: email });
    expect(outcome.kind).toBe('signed-in');
    const users = await db()('identity_users').count({ n: '*' }).first();

    await expectErrorPage(await postAcs(connectionA, samlResponse), world.a.organization.name);

    // Begun, then answered after the ten minutes.
    const interaction = uid();
    const url = await begin(server, connectionA, interaction);
    const metadata = await spMetadata(connectionA);
    const request = await idp.readRequest(url, metadata);
    server.clock.advance(11 * 60_000);
    const late = await idp.respond({
      spMetadata: metadata,
      now: server.clock.now(),
      inResponseTo: request.id,
      nameId: 'late@alpha.example',
    });
    await expectErrorPage(await postAcs(connectionA, late), world.a.organization.name);

    // A response to no request of ours (forged InResponseTo).
    const forged = await idp.respond({
      spMetadata: metadata,
      now: server.clock.now(),
      inResponseTo: '_forged',
      nameId: 'x@alpha.example',
    });
    await expectErrorPage(await postAcs(connectionA, forged), world.a.organization.name);
    // A tampered response (signature) and garbage.
    await expectErrorPage(await postAcs(connectionA, Buffer.from('<nope/>').toString('base64')), world.a.organization.name);
    await expectErrorPage(await postAcs('00000000-0000-4000-8000-000000000000', late));

    expect(await db()('identity_users').count({ n: '*' }).first()).toEqual(users);
    expect(await db()('identity_users').where({ email: 'late@alpha.example' }).first()).toBeUndefined();
  });

  it('refuses unsigned, wrong-audience, expired, tampered, wrapped and commented responses at the ACS, creating nothing', async () => {
    const before = await Promise.all(
      ['identity_users', 'identity_memberships', 'sso_identities'].map(
        async (table) => (await db()(table).count({ n: '*' }).first())?.n,
      ),
    );
    /** A signed answer to a request of ours for `nameId`, as the IdP would post it (`tags` override its fields). */
    async function answer(nameId: string, tags: Record<string, string> = {}, now = server.clock.now()) {
      const url = await begin(server, connectionA, uid());
      const metadata = await spMetadata(connectionA);
      const request = await idp.readRequest(url, metadata);
      return idp.respond({ spMetadata: metadata, now, inResponseTo: request.id, nameId, tags });
    }
    const refused: Array<[string, string]> = [
      ['unsigned', encode(decode(await answer('unsigned@alpha.example')).replace(/<ds:Signature[\s\S]*?<\/ds:Signature>/g, ''))],
      ['wrong audience', await answer('audience@alpha.example', { Audience: 'https://other.example/sso/saml/metadata' })],
      [
        'tampered',
        encode(decode(await answer('tamper@alpha.example')).replace('>tamper@alpha.example<', '>admin@alpha.example<')),
      ],
      [
        'wrapped',
        mutate(await answer('wrap@alpha.example'), (document) => {
          const signed = document.getElementsByTagNameNS(SAML_ASSERTION, 'Assertion')[0] as TestElement;
          const evil = signed.cloneNode(true) as TestElement;
          evil.setAttribute('ID', '_evil');
          const signature = evil.getElementsByTagNameNS(XML_DSIG, 'Signature')[0];
          if (signature) evil.removeChild(signature);
          (evil.getElementsByTagNameNS(SAML_ASSERTION, 'NameID')[0] as TestElement).textContent = 'admin@alpha.example';
          document.documentElement.insertBefore(evil, signed);
        }),
      ],
      [
        'commented',
        encode(
          decode(await answer('ada@alpha.example.evil.test')).replace(
            '>ada@alpha.example.evil.test<',
            '>ada@alpha.example<!---->.evil.test<',
          ),
        ),
      ],
    ];
    // Expired: made by an IdP whose clock is 20 minutes behind (past its validity and the 5 minutes of skew).
    refused.push([
      'expired',
      await answer('late-assertion@alpha.example', {}, new Date(server.clock.now().getTime() - 20 * 60_000)),
    ]);
    for (const [what, samlResponse] of refused) {
      const body = await expectErrorPage(await postAcs(connectionA, samlResponse), world.a.organization.name);
      expect(body, what).not.toMatch(/signature|audience|wrap|node-saml|xmldom/i);
    }
    const after = await Promise.all(
      ['identity_users', 'identity_memberships', 'sso_identities'].map(
        async (table) => (await db()(table).count({ n: '*' }).first())?.n,
      ),
    );
    expect(after).toEqual(before);
  });

  it('refuses bad input at the ACS with the page: not a form, too large, no SAMLResponse, an unknown connection', async () => {
    const acs = `/sso/saml/${connectionA}/acs`;
    const asJson = await server.fetch(acs, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ SAMLResponse: 'x' }),
    });
    expect(asJson.status).toBeGreaterThanOrEqual(400);
    expect(asJson.headers.get('content-type')).toContain('text/html');
    const tooLarge = await server.fetch(acs, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `SAMLResponse=${'A'.repeat(2 * 1024 * 1024)}`,
    });
    expect(tooLarge.status).toBeGreaterThanOrEqual(400);
    expect(tooLarge.headers.get('content-type')).toContain('text/html');
    await expectErrorPage(
      await server.fetch(acs, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'RelayState=%2Faccount',
      }),
    );
    await expectErrorPage(await postAcs('not-a-connection', 'PHg+'));
  });

  it('links an existing account by itself only when both sides verified the address and the organization the domain', async () => {
    const a = world.a.organization.id;
    // Verified here, domain verified by Alpha: linked by itself.
    const grace = await seedUser(db(), { email: 'grace@alpha.example' });
    await db()('identity_users').where({ id: grace.id }).update({ email_verified: true });
    const linked = await signedIn({ nameId: 'grace-subject', attributes: { email: ['grace@alpha.example'] } });
    expect(linked.outcome).toMatchObject({ kind: 'signed-in', userId: grace.id });
    expect(await membershipOf(grace.id, a)).toEqual({ status: 'active', roles: ['user'] });

    // Not verified here: the password first.
    const henry = await seedUser(db(), { email: 'henry@alpha.example' });
    const pending = await signedIn({ nameId: 'henry-subject', attributes: { email: ['henry@alpha.example'] } });
    expect(pending.outcome).toMatchObject({ kind: 'link-required', email: 'henry@alpha.example', connectionName: 'Alpha Okta' });
    if (pending.outcome.kind !== 'link-required') throw new Error('no link');
    expect(await db()('sso_identities').where({ subject: 'henry-subject' }).first()).toBeUndefined();
    expect(await membershipOf(henry.id, a)).toBeUndefined();
    // Another account (not the address's) cannot take it; nor another interaction.
    expect(await federation().link(pending.outcome.handle, 'another-interaction', henry.id)).toMatchObject({ reason: 'expired' });
    expect(await federation().link(pending.outcome.handle, pending.interaction, grace.id)).toMatchObject({
      kind: 'failed',
      reason: 'invalid',
    });
    expect(await db()('sso_identities').where({ subject: 'henry-subject' }).first()).toBeUndefined();

    const retry = await signedIn({ nameId: 'henry-subject', attributes: { email: ['henry@alpha.example'] } });
    if (retry.outcome.kind !== 'link-required') throw new Error('no link');
    // The sign-in page's request confirmed it: its facts go on the record.
    const page = { ip: '198.51.100.4', userAgent: 'Link Browser/1.0', traceId: '4bf92f3577b34da6a3ce929d0e0e4736' };
    expect(await federation().link(retry.outcome.handle, retry.interaction, henry.id, page)).toMatchObject({
      kind: 'signed-in',
      userId: henry.id,
      organizationId: a,
    });
    expect(
      await db()('core_audit_events')
        .where({ action: 'sso.signIn.succeeded', actor_id: henry.id })
        .select('ip', 'user_agent', 'trace_id', 'chain'),
    ).toEqual([{ ip: page.ip, user_agent: page.userAgent, trace_id: page.traceId, chain: a }]);
    expect(await federation().link(retry.outcome.handle, retry.interaction, henry.id)).toMatchObject({ reason: 'expired' });
    expect(await db()('sso_identities').where({ subject: 'henry-subject' }).first()).toMatchObject({ user_id: henry.id });
    expect(await membershipOf(henry.id, a)).toEqual({ status: 'active', roles: ['user'] });
    expect((await outboxEvents(db(), 'UserSignedInWithSsoEvent')).at(-1)).toMatchObject({ userId: henry.id, path: 'linked' });
  });

  it('never links by e-mail alone, nor touches another organization: an address of a domain Beta verified', async () => {
    const bob = await seedUser(db(), { email: 'bob@beta.example' });
    await db()('identity_users').where({ id: bob.id }).update({ email_verified: true });
    await seedMembership(db(), { userId: bob.id, organizationId: world.b.organization.id, roles: ['admin'] });
    const { outcome } = await signedIn({
      nameId: 'bob-at-alpha',
      attributes: { email: ['bob@beta.example'], groups: ['idt-admins'] },
    });
    expect(outcome).toMatchObject({ kind: 'link-required', email: 'bob@beta.example' });
    expect(await membershipOf(bob.id, world.a.organization.id)).toBeUndefined();
    expect(await membershipOf(bob.id, world.b.organization.id)).toEqual({ status: 'active', roles: ['admin'] });

    // A new address of Beta's domain through Alpha's connection: created, a member of Alpha only, address unverified.
    const carol = await signedIn({ nameId: 'carol-subject', attributes: { email: ['carol@beta.example'] } });
    if (carol.outcome.kind !== 'signed-in') throw new Error('not signed in');
    expect(Boolean((await db()('identity_users').where({ id: carol.outcome.userId }).first()).email_verified)).toBe(false);
    expect(await db()('identity_memberships').where({ user_id: carol.outcome.userId }).pluck('organization_id')).toEqual([
      world.a.organization.id,
    ]);
  });

  it('refuses a suspended membership and a deactivated user, and never reactivates', async () => {
    const a = world.a.organization.id;
    const first = await signedIn({ nameId: 'ivy@alpha.example' });
    if (first.outcome.kind !== 'signed-in') throw new Error('not signed in');
    const userId = first.outcome.userId;
    await db()('identity_memberships').where({ user_id: userId, organization_id: a }).update({ status: 'suspended' });
    const suspended = await signedIn({
      nameId: 'ivy@alpha.example',
      attributes: { email: ['ivy@alpha.example'], groups: ['idt-admins'] },
    });
    expect(suspended.outcome).toMatchObject({ kind: 'failed', reason: 'suspended', organizationName: world.a.organization.name });
    expect(await membershipOf(userId, a)).toEqual({ status: 'suspended', roles: ['user'] });

    await db()('identity_memberships').where({ user_id: userId, organization_id: a }).update({ status: 'active' });
    await db()('identity_users').where({ id: userId }).update({ status: 'deactivated' });
    expect((await signedIn({ nameId: 'ivy@alpha.example' })).outcome).toMatchObject({ kind: 'failed', reason: 'suspended' });
    expect((await db()('identity_users').where({ id: userId }).first()).status).toBe('deactivated');
  });

  it('accepts an IdP-initiated sign-in only where allowed: the outcome behind a short-lived cookie, then the default RelayState', async () => {
    const metadata = await spMetadata(connectionAUnsolicited);
    const unsolicited = await idp.respond({ spMetadata: metadata, now: server.clock.now(), nameId: 'tile@alpha.example' });
    const response = await postAcs(connectionAUnsolicited, unsolicited, 'https://evil.example/');
    const cookie = response.headers.get('set-cookie') ?? '';
    expect(await continuesTo(response)).toBe('/account');
    expect(cookie).toMatch(/^idt_sso_unsolicited=[A-Za-z0-9_-]+; HttpOnly; SameSite=Lax; Path=\/; Max-Age=300$/);
    const header = cookie.split(';')[0] ?? '';
    expect(await federation().consumeUnsolicited(`other=1; ${header}`)).toMatchObject({
      kind: 'signed-in',
      organizationId: world.a.organization.id,
    });
    expect(await federation().consumeUnsolicited(header)).toMatchObject({ kind: 'failed', reason: 'expired' });
    expect(await federation().consumeUnsolicited('other=1')).toBeUndefined();
    expect(await federation().consumeUnsolicited(null)).toBeUndefined();
    expect((await outboxEvents(db(), 'UserSignedInWithSsoEvent')).at(-1)).toMatchObject({ initiatedBy: 'idp' });

    // The connection that does not allow it.
    const refused = await idp.respond({
      spMetadata: await spMetadata(connectionA),
      now: server.clock.now(),
      nameId: 'nope@alpha.example',
    });
    const answer = await postAcs(connectionA, refused);
    await expectErrorPage(answer, world.a.organization.name);
    expect(answer.headers.get('set-cookie')).toBeNull();
    expect(await db()('identity_users').where({ email: 'nope@alpha.example' }).first()).toBeUndefined();
  });

  it('sets ssoRequired through the policy API, for the organization’s admins only, and routing sees it at once', async () => {
    const a = world.a;
    const path = `/v1/identity/organizations/${a.organization.id}/sso/policy`;
    expect(await expectJson(await call('GET', path, { token: a.tokens.admin }))).toEqual({
      organizationId: a.organization.id,
      ssoRequired: false,
      updatedAt: null,
    });
    expect((await federation().homeRealm('ada@alpha.example'))?.ssoRequired).toBe(false);
    const put = await expectJson(await call('PUT', path, { token: a.tokens.owner, body: { ssoRequired: true } }));
    expect(put).toMatchObject({ ssoRequired: true, updatedAt: expect.any(String) });
    expect((await federation().homeRealm('ada@alpha.example'))?.ssoRequired).toBe(true);
    expect((await federation().homeRealm('bob@beta.example'))?.ssoRequired).toBe(false);
    expect((await outboxEvents(db(), 'SsoPolicyChangedEvent')).at(-1)).toMatchObject({
      organizationId: a.organization.id,
      ssoRequired: true,
    });

    await expectProblem(await call('PUT', path, { token: a.tokens.user, body: { ssoRequired: false } }), 403, 'Auth.Forbidden');
    await expectProblem(await call('GET', path, { token: a.tokens.manager }), 403, 'Auth.Forbidden');
    await expectProblem(
      await call('PUT', path, { token: world.b.tokens.admin, body: { ssoRequired: false } }),
      404,
      'Identity.OrganizationNotFound',
    );
    expect((await call('GET', path)).status).toBe(401);
    for (const body of [{}, { ssoRequired: 'yes' }, { ssoRequired: true, extra: 1 }, '{not json', []]) {
      const response = await call('PUT', path, { token: a.tokens.admin, body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
    }
    expect((await expectJson(await call('GET', path, { token: world.platformToken }))).ssoRequired).toBe(true);
    await expectJson(await call('PUT', path, { token: a.tokens.admin, body: { ssoRequired: false } }));

    // Disabling the organization's connections stops the routing at once.
    for (const id of [connectionA, connectionAUnsolicited]) {
      await expectJson(await call('POST', `${connections(a.organization.id)}/${id}/disable`, { token: a.tokens.admin }));
    }
    expect(await federation().homeRealm('ada@alpha.example')).toBeUndefined();
    expect(await federation().begin(connectionA, { interactionUid: 'x', returnPath: '/interaction/x/federated' })).toEqual({
      kind: 'failed',
      reason: 'disabled',
      organizationName: a.organization.name,
      connectionName: 'Alpha Okta',
    });
  });
});
