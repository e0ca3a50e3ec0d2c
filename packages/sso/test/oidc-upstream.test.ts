import { createManualClock } from '@idt/core';
import { Browser, freePort, type TestClient, type TestServer, tableResolver } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createGuardedFetch,
  createUpstreamOidc,
  type GuardedFetch,
  mapUpstreamClaims,
  type UpstreamAuthorization,
  type UpstreamOidc,
  type UpstreamOidcConnection,
  UpstreamOidcError,
  type UpstreamOidcOptions,
} from '../src/index.js';
import { startStallingProvider } from './support/stalling-provider.js';
import { addUpstreamMember, DOWNSTREAM_CALLBACK, signInAtUpstream, startUpstreamIdt } from './support/upstream-idt.js';

// Nothing listens there: the browser stops at the redirect, the way a callback arrives at idt.
const REDIRECT_URI = DOWNSTREAM_CALLBACK;
const EMAIL = 'grace@example.com';

let upstream: TestServer;
let client: TestClient;
let otherClient: TestClient;
let browser: Browser;
let organizationId: string;

function connectionOf(
  issuer: string,
  registered: TestClient,
  id = 'c0a80101-0000-4000-8000-000000000001',
): UpstreamOidcConnection {
  return {
    id,
    oidc: { issuer, clientId: registered.clientId, scopes: ['openid', 'email', 'profile'] },
    clientSecret: registered.clientSecret,
    attributeMapping: { emailVerified: 'email_verified' },
  };
}

function relyingParty(options: Partial<UpstreamOidcOptions> = {}): UpstreamOidc {
  return createUpstreamOidc({ allowPrivateHosts: true, timeoutMs: 3_000, ...options });
}

/** Starts an authorization with `rp` and signs in at the upstream: the callback URL and the transaction. */
async function authorized(rp: UpstreamOidc, connection: UpstreamOidcConnection, as = { browser, email: EMAIL }) {
  const started = await rp.startAuthorization({ connection, redirectUri: REDIRECT_URI, loginHint: as.email });
  const callback = await signInAtUpstream(started.url, as.browser, as.email);
  const { url: _url, ...transaction } = started;
  return { started, transaction, callback };
}

/** Serves the upstream's discovery document as published by another issuer (its endpoints stay the upstream's). */
function discoveryAs(issuer: string, drop: readonly string[] = []): GuardedFetch {
  const transport = createGuardedFetch({ allowPrivateHosts: true });
  return async (url, init) => {
    if (!url.endsWith('/.well-known/openid-configuration')) return transport(url, init);
    const response = await transport(url.replace(issuer, upstream.origin), init);
    const document = (await response.json()) as Record<string, unknown>;
    for (const field of drop) delete document[field];
    return Response.json({ ...document, issuer });
  };
}

beforeAll(async () => {
  const started = await startUpstreamIdt(REDIRECT_URI, [EMAIL]);
  ({ server: upstream, client, organizationId } = started);
  otherClient = await started.registerClient('Another app');
  browser = new Browser();
}, 60_000);

afterAll(async () => {
  await upstream?.close();
});

describe('upstream OpenID sign-in through a second idt', () => {
  it('starts with code, PKCE S256, state, nonce and login_hint, and completes with the verified subject and claims', async () => {
    const clock = createManualClock(Date.now());
    const rp = relyingParty({ clock });
    const connection = connectionOf(upstream.url, client);
    const { started, transaction, callback } = await authorized(rp, connection);

    const request = new URL(started.url);
    expect(request.origin).toBe(upstream.origin);
    expect(Object.fromEntries(request.searchParams)).toMatchObject({
      client_id: client.clientId,
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      scope: 'openid email profile',
      code_challenge_method: 'S256',
      state: started.state,
      nonce: started.nonce,
      login_hint: EMAIL,
    });
    expect(started.expiresAt.getTime()).toBe(clock.now().getTime() + 10 * 60_000);
    expect(callback.origin + callback.pathname).toBe(REDIRECT_URI);

    const result = await rp.completeAuthorization({ connection, transaction, callbackUrl: callback });
    if (!result.ok) throw new Error(`${result.reason}: ${result.detail}`);
    expect(result.issuer).toBe(upstream.url);
    expect(result.subject).toMatch(/\S/);
    expect(result.claims).toMatchObject({ sub: result.subject, iss: upstream.url, aud: client.clientId, email: EMAIL });
    // A self-registered address the upstream has not verified.
    expect(result.claims.email_verified).toBe(false);
    expect(result.emailVerified).toBe(false);
    expect(mapUpstreamClaims(result.claims, connection.attributeMapping)).toMatchObject({ email: EMAIL, firstName: 'Test' });

    // A code is redeemed once: the same callback again is refused by the upstream.
    const again = await rp.completeAuthorization({ connection, transaction, callbackUrl: callback });
    expect(again).toMatchObject({ ok: false, reason: 'upstream-error', upstreamError: 'invalid_grant' });
  });

  it('says the e-mail is verified when the upstream asserts email_verified', async () => {
    const email = 'ada@example.com';
    const userId = await addUpstreamMember({ server: upstream, organizationId }, email);
    await upstream.database.db('identity_users').where({ id: userId }).update({ email_verified: true });
    const rp = relyingParty();
    const connection = connectionOf(upstream.url, client);
    const { transaction, callback } = await authorized(rp, connection, { browser: new Browser(), email });
    const result = await rp.completeAuthorization({ connection, transaction, callbackUrl: callback });
    expect(result).toMatchObject({ ok: true, emailVerified: true, claims: { email_verified: true } });
  });

  it('refuses a callback whose state is not the transaction’s', async () => {
    const rp = relyingParty();
    const connection = connectionOf(upstream.url, client);
    const { transaction, callback } = await authorized(rp, connection);
    const forged = new URL(callback);
    forged.searchParams.set('state', 'attacker-state');
    expect(await rp.completeAuthorization({ connection, transaction, callbackUrl: forged })).toMatchObject({
      ok: false,
      reason: 'state-mismatch',
    });
    const missing = new URL(callback);
    missing.searchParams.delete('state');
    expect(await rp.completeAuthorization({ connection, transaction, callbackUrl: missing })).toMatchObject({
      reason: 'state-mismatch',
    });
    // Another connection's transaction is not this one's.
    expect(
      await rp.completeAuthorization({
        connection: { ...connection, id: 'c0a80101-0000-4000-8000-000000000002' },
        transaction,
        callbackUrl: callback,
      }),
    ).toMatchObject({ reason: 'state-mismatch' });
  });

  it('refuses an id token whose nonce is not the transaction’s', async () => {
    const rp = relyingParty();
    const connection = connectionOf(upstream.url, client);
    const { transaction, callback } = await authorized(rp, connection);
    const result = await rp.completeAuthorization({
      connection,
      transaction: { ...transaction, nonce: 'another-nonce' },
      callbackUrl: callback,
    });
    expect(result).toMatchObject({ ok: false, reason: 'nonce-mismatch' });
  });

  it('refuses an id token issued to another client', async () => {
    // The connection expects `otherClient`; a provider hands it a token issued to `client`.
    const basic = `Basic ${Buffer.from(
      `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`,
    ).toString('base64')}`;
    const guarded = createGuardedFetch({ allowPrivateHosts: true });
    const mixUp: GuardedFetch = (url, init = {}) =>
      guarded(url, url.endsWith('/token') ? { ...init, headers: { ...init.headers, authorization: basic } } : init);
    const rp = relyingParty({ fetch: mixUp });
    const connection = connectionOf(upstream.url, client);
    const { transaction, callback } = await authorized(rp, connection);
    const expectingOther = connectionOf(upstream.url, otherClient);
    const result = await rp.completeAuthorization({ connection: expectingOther, transaction, callbackUrl: callback });
    expect(result).toMatchObject({ ok: false, reason: 'wrong-audience' });
  });

  it('refuses an issuer other than the connection’s, in the callback and in the id token', async () => {
    const port = new URL(upstream.origin).port;
    const issuer = `http://upstream.test:${port}`;
    const { resolve } = tableResolver({ 'upstream.test': ['127.0.0.1'] });
    const connection = connectionOf(issuer, client);

    // The provider's callback names its real issuer (RFC 9207).
    const rp = relyingParty({ fetch: discoveryAs(issuer) });
    const first = await authorized(rp, connection);
    const result = await rp.completeAuthorization({ connection, transaction: first.transaction, callbackUrl: first.callback });
    expect(result).toMatchObject({ ok: false, reason: 'wrong-issuer' });

    // A provider without the callback `iss`: the id token's issuer is compared.
    const quiet = relyingParty({ fetch: discoveryAs(issuer, ['authorization_response_iss_parameter_supported']) });
    const second = await authorized(quiet, connection);
    const withoutIss = new URL(second.callback);
    withoutIss.searchParams.delete('iss');
    const token = await quiet.completeAuthorization({ connection, transaction: second.transaction, callbackUrl: withoutIss });
    expect(token).toMatchObject({ ok: false, reason: 'wrong-issuer' });

    // A connection whose issuer is not what the provider's discovery says cannot even start.
    const strict = relyingParty({ resolve });
    const refused = await strict.startAuthorization({ connection, redirectUri: REDIRECT_URI }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UpstreamOidcError);
    expect(refused).toMatchObject({ reason: 'wrong-issuer' });
  });

  it('refuses an expired id token on the injected clock', async () => {
    const clock = createManualClock(Date.now());
    const rp = relyingParty({ clock, transactionTtlMs: 6 * 3600_000 });
    const connection = connectionOf(upstream.url, client);
    const { transaction, callback } = await authorized(rp, connection);
    clock.advance(3 * 3600_000);
    expect(await rp.completeAuthorization({ connection, transaction, callbackUrl: callback })).toMatchObject({
      ok: false,
      reason: 'expired-id-token',
    });
  });

  it('refuses a callback after the transaction expired', async () => {
    const clock = createManualClock(Date.now());
    const rp = relyingParty({ clock });
    const connection = connectionOf(upstream.url, client);
    const started = await rp.startAuthorization({ connection, redirectUri: REDIRECT_URI });
    clock.advance(10 * 60_000 + 1);
    const callback = `${REDIRECT_URI}?code=x&state=${started.state}`;
    expect(await rp.completeAuthorization({ connection, transaction: started, callbackUrl: callback })).toMatchObject({
      reason: 'transaction-expired',
    });
  });

  it('answers access-denied for error=access_denied, upstream-error for other errors, with the code for logs only', async () => {
    const rp = relyingParty();
    const connection = connectionOf(upstream.url, client);
    const started: UpstreamAuthorization = await rp.startAuthorization({ connection, redirectUri: REDIRECT_URI });
    const callback = (error: string) =>
      `${REDIRECT_URI}?${new URLSearchParams({ error, error_description: 'The <b>user</b> said no', state: started.state, iss: upstream.url })}`;
    const denied = await rp.completeAuthorization({ connection, transaction: started, callbackUrl: callback('access_denied') });
    expect(denied).toMatchObject({ ok: false, reason: 'access-denied', upstreamError: 'access_denied' });
    const other = await rp.completeAuthorization({ connection, transaction: started, callbackUrl: callback('server_error') });
    expect(other).toMatchObject({ ok: false, reason: 'upstream-error', upstreamError: 'server_error' });
  });
});

describe('an upstream that cannot be reached', () => {
  it('answers unreachable for a closed port, at the start and at the callback', async () => {
    const issuer = `http://127.0.0.1:${await freePort()}`;
    const rp = relyingParty();
    const connection = connectionOf(issuer, client);
    const refused = await rp.startAuthorization({ connection, redirectUri: REDIRECT_URI }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UpstreamOidcError);
    expect(refused).toMatchObject({ reason: 'unreachable' });
    const transaction = {
      connectionId: connection.id,
      issuer,
      redirectUri: REDIRECT_URI,
      state: 's',
      nonce: 'n',
      codeVerifier: 'v'.repeat(43),
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    };
    const result = await rp.completeAuthorization({ connection, transaction, callbackUrl: `${REDIRECT_URI}?code=c&state=s` });
    expect(result).toMatchObject({ ok: false, reason: 'unreachable' });
    expect(JSON.stringify(result)).not.toMatch(/ECONNREFUSED.*at /);
  });

  it('refuses private and metadata hosts unless private hosts are allowed', async () => {
    const rp = createUpstreamOidc({ allowPrivateHosts: false });
    for (const issuer of [upstream.url, 'https://127.0.0.1', 'https://169.254.169.254']) {
      const refused = await rp
        .startAuthorization({ connection: connectionOf(issuer, client), redirectUri: REDIRECT_URI })
        .catch((error: unknown) => error);
      expect(refused).toMatchObject({ reason: 'unreachable' });
    }
  });

  it('answers timeout when the provider does not answer within the deadline', async () => {
    const silent = await startStallingProvider({ discovery: false });
    const stalling = await startStallingProvider({ discovery: true });
    try {
      const rp = relyingParty({ timeoutMs: 300 });
      const begun = Date.now();
      const refused = await rp
        .startAuthorization({ connection: connectionOf(silent.origin, client), redirectUri: REDIRECT_URI })
        .catch((error: unknown) => error);
      expect(refused).toMatchObject({ reason: 'timeout' });
      expect(Date.now() - begun).toBeLessThan(2_500);

      // Discovery answers, the token endpoint never does.
      const connection = connectionOf(stalling.origin, client);
      const started = await rp.startAuthorization({ connection, redirectUri: REDIRECT_URI });
      const result = await rp.completeAuthorization({
        connection,
        transaction: started,
        callbackUrl: `${REDIRECT_URI}?code=c&state=${started.state}`,
      });
      expect(result).toMatchObject({ ok: false, reason: 'timeout' });
    } finally {
      await Promise.all([silent.close(), stalling.close()]);
    }
  });
});
