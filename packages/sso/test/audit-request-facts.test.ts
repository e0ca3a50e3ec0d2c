import { randomBytes } from 'node:crypto';
import { expectJson, type TestIdt, testDialects, type World } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestIdentityProvider } from './support/saml-idp.js';
import { begin, continuesTo, handleOf } from './support/sign-in.js';
import { servicesOf, startSsoInstance } from './support/sso-instance.js';

const idp = createTestIdentityProvider({ entityId: 'https://idp.facts.test/metadata', ssoUrl: 'https://idp.facts.test/sso' });

/** The columns of an audit row this file looks at. */
interface Row {
  chain: string;
  action: string;
  outcome: string;
  actor_id: string | null;
  target_id: string | null;
  ip: string | null;
  user_agent: string | null;
  trace_id: string | null;
  metadata: string;
}

/** A fresh W3C trace context: the header and the trace id it carries. */
function traceContext(): { traceparent: string; traceId: string } {
  const traceId = randomBytes(16).toString('hex');
  return { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`, traceId };
}

/**
 * `sso.signIn.succeeded` and `sso.signIn.failed` carry the facts of the
 * request that decided them, the SAML ACS post: the client address as the
 * server sees it (the test host is a peer on 127.0.0.1), the `user-agent`
 * and the trace id of `traceparent`. SP- and IdP-initiated alike.
 */
describe.each(testDialects())('the request facts of SSO sign-in records on %s', (dialect) => {
  let server: TestIdt;
  let world: World;
  let call: Awaited<ReturnType<typeof startSsoInstance>>['call'];
  let connectionId: string;
  let unsolicitedId: string;
  let counter = 0;
  const uid = () => `facts-${dialect}-${++counter}`;
  const federation = () => servicesOf(server).federation;
  const spMetadata = async (id: string) => (await server.fetch(`/sso/saml/${id}/metadata`)).text();

  /** Posts a SAMLResponse to a connection's ACS as a browser would, with its user agent and trace context. */
  function postAcs(id: string, samlResponse: string, headers: { userAgent: string; traceparent: string }) {
    return server.fetch(`/sso/saml/${id}/acs`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: 'https://idp.facts.test',
        'user-agent': headers.userAgent,
        traceparent: headers.traceparent,
      },
      body: new URLSearchParams({ SAMLResponse: samlResponse }).toString(),
    });
  }

  /** SP-initiated: begins at the connection, the IdP answers the request, the browser posts it. */
  async function spInitiated(nameId: string, attributes: Record<string, string[]>, userAgent: string) {
    const interaction = uid();
    const url = await begin(server, connectionId, interaction);
    const metadata = await spMetadata(connectionId);
    const request = await idp.readRequest(url, metadata);
    const samlResponse = await idp.respond({
      spMetadata: metadata,
      now: server.clock.now(),
      inResponseTo: request.id,
      nameId,
      attributes,
    });
    const trace = traceContext();
    const response = await postAcs(connectionId, samlResponse, { userAgent, traceparent: trace.traceparent });
    return { response, interaction, traceId: trace.traceId };
  }

  /** The rows of the request with trace id `traceId`: exactly one is expected. */
  const rowsOf = (traceId: string): Promise<Row[]> =>
    server.database.db('core_audit_events').where({ trace_id: traceId }).orderBy('seq', 'asc') as Promise<Row[]>;

  beforeAll(async () => {
    ({ server, world, call } = await startSsoInstance({ dialect }));
    const base = `/v1/identity/organizations/${world.a.organization.id}/sso/connections`;
    const body = { kind: 'saml', name: 'Facts IdP', enabled: true, saml: { metadataXml: idp.metadata } };
    connectionId = (await expectJson(await call('POST', base, { token: world.a.tokens.admin, body }), 201)).id;
    unsolicitedId = (
      await expectJson(
        await call('POST', base, {
          token: world.a.tokens.admin,
          body: {
            ...body,
            name: 'Facts IdP tiles',
            saml: { metadataXml: idp.metadata, allowIdpInitiated: true, defaultRelayState: '/account' },
          },
        }),
        201,
      )
    ).id;
  });

  afterAll(async () => {
    await server?.close();
  });

  it('records the ACS post’s ip, user agent and trace id on sso.signIn.succeeded', async () => {
    const email = 'ada@facts.example';
    const { response, interaction, traceId } = await spInitiated(email, { email: [email] }, 'Facts Browser/1.0');
    const outcome = await federation().consume(await handleOf(response, interaction), interaction);
    if (outcome.kind !== 'signed-in') throw new Error(`not signed in: ${JSON.stringify(outcome)}`);

    const rows = await rowsOf(traceId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      chain: world.a.organization.id,
      action: 'sso.signIn.succeeded',
      outcome: 'success',
      actor_id: outcome.userId,
      ip: '127.0.0.1',
      user_agent: 'Facts Browser/1.0',
      trace_id: traceId,
    });
    expect(JSON.parse(rows[0]?.metadata ?? '{}')).toMatchObject({ provisioning: 'provisioned', initiatedBy: 'sp' });
  });

  it('records them on sso.signIn.failed when the ACS refuses the sign-in', async () => {
    // A signed answer with no e-mail (no attribute, a NameID that is no address): refused as `no-email`.
    const { response, interaction, traceId } = await spInitiated('subject-without-address', {}, 'Facts Browser/2.0');
    const outcome = await federation().consume(await handleOf(response, interaction), interaction);
    expect(outcome).toMatchObject({ kind: 'failed', reason: 'no-email', audited: true });

    const rows = await rowsOf(traceId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      chain: world.a.organization.id,
      action: 'sso.signIn.failed',
      outcome: 'failure',
      target_id: connectionId,
      ip: '127.0.0.1',
      user_agent: 'Facts Browser/2.0',
      trace_id: traceId,
    });
    expect(JSON.parse(rows[0]?.metadata ?? '{}')).toEqual({ reason: 'no-email' });
  });

  it('records them for IdP-initiated sign-ins, succeeded and refused, and the chain still verifies', async () => {
    const metadata = await spMetadata(unsolicitedId);
    const email = 'tile@facts.example';
    const accepted = traceContext();
    const response = await postAcs(
      unsolicitedId,
      await idp.respond({ spMetadata: metadata, now: server.clock.now(), nameId: email, attributes: { email: [email] } }),
      { userAgent: 'Tile Browser/1.0', traceparent: accepted.traceparent },
    );
    expect(await continuesTo(response)).toBe('/account');
    const [succeeded] = await rowsOf(accepted.traceId);
    expect(succeeded).toMatchObject({
      action: 'sso.signIn.succeeded',
      ip: '127.0.0.1',
      user_agent: 'Tile Browser/1.0',
      trace_id: accepted.traceId,
    });
    expect(JSON.parse(succeeded?.metadata ?? '{}')).toMatchObject({ initiatedBy: 'idp' });

    const refused = traceContext();
    const answer = await postAcs(
      unsolicitedId,
      await idp.respond({ spMetadata: metadata, now: server.clock.now(), nameId: 'tile-without-address', attributes: {} }),
      { userAgent: 'Tile Browser/2.0', traceparent: refused.traceparent },
    );
    expect(answer.status).toBe(400);
    const failed = await rowsOf(refused.traceId);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({
      action: 'sso.signIn.failed',
      outcome: 'failure',
      target_id: unsolicitedId,
      ip: '127.0.0.1',
      user_agent: 'Tile Browser/2.0',
      trace_id: refused.traceId,
    });
    expect(JSON.parse(failed[0]?.metadata ?? '{}')).toEqual({ reason: 'no-email', initiatedBy: 'idp' });

    // The facts are part of each record's hash: the organization's chain still checks out.
    const verified = await expectJson(await call('GET', '/v1/audit/verify', { token: world.a.tokens.owner }));
    expect(verified).toMatchObject({ valid: true, broken: null });
  });
});
