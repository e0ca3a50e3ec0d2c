import { randomUUID } from 'node:crypto';
import { BACKCHANNEL_LOGOUT_EVENT } from '@idt/bff';
import { createManualClock, type ManualClock } from '@idt/core';
import { oidcClient } from '@idt/testing';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  bffSignIn,
  postLogoutToken,
  sessionOf,
  signLogoutToken,
  startTestBff,
  startTestProvider,
  type TestBff,
  type TestProvider,
} from './support.js';

describe('BFF front- and back-channel logout against the reference provider', () => {
  let provider: TestProvider;
  let bff: TestBff;
  let clock: ManualClock;
  beforeAll(async () => {
    provider = await startTestProvider();
    clock = createManualClock();
    bff = await startTestBff(provider, { clock });
  });
  afterAll(async () => {
    await bff?.close();
    await provider?.close();
  });
  beforeEach(() => {
    clock.set(Date.now());
  });

  const signedIn = async () => {
    const { browser } = await bffSignIn(bff, provider);
    return { browser, session: await sessionOf(browser, bff) };
  };
  const alive = async (id: string) => (await bff.bff.store.read(id, clock.now().getTime())) !== undefined;

  it('ends only the sessions of the sid a front-channel request names, and only for the configured issuer', async () => {
    const one = await signedIn();
    const two = await signedIn();
    expect(one.session.sid).not.toBe(two.session.sid);
    const frontchannel = (query: Record<string, string>) =>
      fetch(`${bff.url}/bff/frontchannel-logout?${new URLSearchParams(query)}`);

    const queries: Array<Record<string, string>> = [
      { iss: 'https://other.example.com', sid: one.session.sid ?? '' },
      { iss: `${provider.server.url}/`, sid: one.session.sid ?? '' },
      { iss: provider.server.url, sid: 'another-sid' },
      { iss: provider.server.url },
      { sid: one.session.sid ?? '' },
    ];
    for (const query of queries) {
      const response = await frontchannel(query);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(response.headers.getSetCookie()).toEqual([]);
      expect(await alive(one.session.id)).toBe(true);
    }

    const response = await frontchannel({ iss: provider.server.url, sid: one.session.sid ?? '' });
    expect(response.status).toBe(200);
    // Framed by the provider's logout page and no one else.
    expect(response.headers.get('content-security-policy')).toBe(
      `default-src 'none'; frame-ancestors ${new URL(provider.server.url).origin}`,
    );
    expect(response.headers.get('x-frame-options')).toBeNull();
    expect(await response.text()).toMatch(/^<!doctype html>/);
    expect(await alive(one.session.id)).toBe(false);
    expect(await alive(two.session.id)).toBe(true);
    expect((await one.browser.request(`${bff.url}/bff/user`)).status).toBe(401);
    expect((await two.browser.request(`${bff.url}/bff/user`)).status).toBe(200);
    expect((await fetch(`${bff.url}/bff/frontchannel-logout`, { method: 'POST' })).status).toBe(405);
  });

  it('ends the session when the provider sends its back-channel logout token, and only that one', async () => {
    const one = await signedIn();
    const two = await signedIn();
    const config = await oidcClient.discovery(
      new URL(provider.server.url),
      bff.client.clientId,
      bff.client.clientSecret,
      undefined,
      { execute: [oidcClient.allowInsecureRequests] },
    );
    const logoutUrl = oidcClient.buildEndSessionUrl(config, {
      id_token_hint: one.session.idToken ?? '',
      post_logout_redirect_uri: `${bff.url}/`,
    });
    const confirmation = await one.browser.navigate(logoutUrl.href);
    expect(confirmation.status).toBe(200);
    await one.browser.submit({ form: 'logout', fields: { logout: 'yes' } });
    await vi.waitFor(async () => expect(await alive(one.session.id)).toBe(false), { timeout: 10_000, interval: 25 });
    expect(await alive(two.session.id)).toBe(true);
  });

  describe('logout tokens', () => {
    const claims = (sid: string, overrides: Record<string, unknown> = {}) => {
      const iat = Math.floor(clock.now().getTime() / 1000);
      return {
        iss: provider.server.url,
        aud: bff.client.clientId,
        iat,
        exp: iat + 120,
        jti: randomUUID(),
        sub: provider.admin.userId,
        sid,
        events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
        ...overrides,
      };
    };

    async function expectRefused(response: Response) {
      expect(response.status).toBe(400);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(await response.text()).toBe('{"error":"invalid_request"}');
    }

    it('accepts a valid token, also without a matching session', async () => {
      const one = await signedIn();
      const two = await signedIn();
      const response = await postLogoutToken(bff, await signLogoutToken(provider, claims(one.session.sid ?? '')));
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(await alive(one.session.id)).toBe(false);
      expect(await alive(two.session.id)).toBe(true);
      expect((await postLogoutToken(bff, await signLogoutToken(provider, claims('no-such-sid')))).status).toBe(200);
      // Within the 5-minute clock tolerance.
      const iat = Math.floor(clock.now().getTime() / 1000) - 400;
      const late = await signLogoutToken(provider, claims('no-such-sid', { iat, exp: iat + 120 }));
      expect((await postLogoutToken(bff, late)).status).toBe(200);
    });

    it('ends every session of the subject when the token names no sid', async () => {
      const one = await signedIn();
      const { sid: _, ...withoutSid } = claims('unused');
      const response = await postLogoutToken(bff, await signLogoutToken(provider, withoutSid));
      expect(response.status).toBe(200);
      expect(await alive(one.session.id)).toBe(false);
    });

    it('refuses every invalid token the same way and ends nothing', async () => {
      const { session } = await signedIn();
      const sid = session.sid ?? '';
      const valid = await signLogoutToken(provider, claims(sid));
      const [header, payload, signature = ''] = valid.split('.');
      const flipped = `${header}.${payload}.${signature.slice(0, -4)}${signature.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;

      const { privateKey, publicKey } = await generateKeyPair('RS256');
      const providerKid = JSON.parse(Buffer.from(header ?? '', 'base64url').toString()).kid as string;
      const foreign = await new SignJWT(claims(sid))
        .setProtectedHeader({ alg: 'RS256', kid: providerKid, typ: 'logout+jwt' })
        .sign(privateKey);
      expect(await exportJWK(publicKey)).toBeTruthy();
      const symmetric = await new SignJWT(claims(sid))
        .setProtectedHeader({ alg: 'HS256', typ: 'logout+jwt' })
        .sign(new TextEncoder().encode(bff.client.clientSecret));
      const { events: _, ...noEvents } = claims(sid);
      const iat = Math.floor(clock.now().getTime() / 1000) - 1000;

      const refused: Array<[string, string]> = [
        ['bad signature', flipped],
        ['signed by another key', foreign],
        ['symmetric algorithm', symmetric],
        ['wrong audience', await signLogoutToken(provider, claims(sid, { aud: 'another-client' }))],
        ['wrong issuer', await signLogoutToken(provider, claims(sid, { iss: 'https://evil.example.com' }))],
        ['nonce present', await signLogoutToken(provider, claims(sid, { nonce: 'n' }))],
        ['events missing', await signLogoutToken(provider, noEvents)],
        ['other event', await signLogoutToken(provider, claims(sid, { events: { 'urn:other': {} } }))],
        ['event not an object', await signLogoutToken(provider, claims(sid, { events: { [BACKCHANNEL_LOGOUT_EVENT]: true } }))],
        ['typ JWT', await signLogoutToken(provider, claims(sid), { typ: 'JWT' })],
        ['typ missing', await signLogoutToken(provider, claims(sid), {})],
        ['expired', await signLogoutToken(provider, claims(sid, { iat, exp: iat + 120 }))],
        ['no iat', await signLogoutToken(provider, claims(sid, { iat: undefined }))],
        ['no exp', await signLogoutToken(provider, claims(sid, { exp: undefined }))],
        ['neither sid nor sub', await signLogoutToken(provider, claims(sid, { sid: undefined, sub: undefined }))],
        ['not a JWT', 'not-a-jwt'],
      ];
      for (const [reason, token] of refused) {
        const response = await postLogoutToken(bff, token);
        expect([reason, response.status]).toEqual([reason, 400]);
        await expectRefused(response);
      }
      await expectRefused(
        await fetch(`${bff.url}/bff/backchannel-logout`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ logout_token: valid }),
        }),
      );
      await expectRefused(
        await fetch(`${bff.url}/bff/backchannel-logout`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'other=1',
        }),
      );
      const wrongMethod = await fetch(`${bff.url}/bff/backchannel-logout`);
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.headers.get('allow')).toBe('POST');
      expect(await alive(session.id)).toBe(true);
      expect((await postLogoutToken(bff, valid)).status).toBe(200);
      expect(await alive(session.id)).toBe(false);
    });
  });
});
