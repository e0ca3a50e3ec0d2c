import {
  type BffSession,
  bffConfigFromEnv,
  createBffCookies,
  createBffSessions,
  createMemoryBffSessionStore,
  createSealer,
  type LoginTransaction,
} from '@idt/bff';
import { createManualClock } from '@idt/core';
import { describe, expect, it } from 'vitest';
import { sealKeyId } from '../src/cookies/seal.js';
import { OFFLINE_BFF_ENV, parseSetCookie } from './support.js';

const NEW_SECRET = 'n'.repeat(32);
const OLD_SECRET = 'o'.repeat(32);

/** The offline configuration without a cookie secret: each test names its own. */
const BASE_ENV = { ...OFFLINE_BFF_ENV, COOKIE_PASSWORD: undefined };

const single = (secret = OLD_SECRET, extra: Record<string, string> = {}) =>
  bffConfigFromEnv({ ...BASE_ENV, COOKIE_PASSWORD: secret, ...extra });
const rotated = () =>
  bffConfigFromEnv({ ...BASE_ENV, COOKIE_PASSWORDS: JSON.stringify({ k2: NEW_SECRET, default: OLD_SECRET }) });

const STATE = 'Zm9yLXRoZS1zdGF0ZS1vZi1hLWxvZ2lu';
const TX: LoginTransaction = { state: STATE, nonce: 'n', codeVerifier: 'v', returnTo: '/orders', organization: 'org' };
/** The one `Set-Cookie` value of a first sign-in. */
const only = (values: string[]) => {
  expect(values).toHaveLength(1);
  return values[0] as string;
};

function session(id: string, now: number): BffSession {
  return {
    id,
    user: { sub: 'user-1', name: null, email: null, orgId: null, orgName: null, roles: [] },
    sid: 'sid-1',
    accessToken: 'at',
    accessTokenExpiresAt: now + 900_000,
    refreshToken: 'rt',
    idToken: 'idt',
    csrfToken: 'csrf',
    createdAt: now,
    expiresAt: now + 86_400_000,
  };
}

const headersWith = (...setCookies: string[]) => {
  const pairs = setCookies.map(parseSetCookie).map(({ name, value }) => `${name}=${value}`);
  return new Headers({ cookie: ['other=1', ...pairs].join('; ') });
};

const noRefresh = { refresh: async () => ({ kind: 'unavailable' as const, error: new Error('not in this test') }) };

describe('BFF cookies', () => {
  it('writes the session cookie with exactly HttpOnly; Secure; SameSite=Strict; Path=/ and the session lifetime', async () => {
    const cookies = createBffCookies(single());
    const written = await cookies.sessionCookie('session-id', 86_400);
    const parsed = parseSetCookie(written);
    expect(parsed.name).toBe('__Host-idt_bff');
    expect([...parsed.attributes]).toEqual([
      ['path', '/'],
      ['max-age', '86400'],
      ['httponly', ''],
      ['secure', ''],
      ['samesite', 'Strict'],
    ]);
    expect(parsed.attributes.has('domain')).toBe(false);
    // The value is the sealed session id and nothing else.
    expect(parsed.value).toMatch(/^Fe26\.2\*default\*/);
    expect(written).not.toContain('session-id');
    expect(await cookies.readSession(headersWith(written))).toEqual({
      state: 'valid',
      sessionId: 'session-id',
      needsReseal: false,
    });

    const cleared = parseSetCookie(cookies.clearSession());
    expect(cleared).toMatchObject({ name: '__Host-idt_bff', value: '' });
    expect(cleared.attributes.get('max-age')).toBe('0');
  });

  it('writes the login-transaction cookie SameSite=Lax for 10 minutes', async () => {
    const cookies = createBffCookies(single());
    const parsed = parseSetCookie(only(await cookies.transactionCookie(TX)));
    expect(parsed.name).toBe(`__Host-idt_bff_tx_${STATE.slice(0, 16)}`);
    expect([...parsed.attributes]).toEqual([
      ['path', '/'],
      ['max-age', '600'],
      ['httponly', ''],
      ['secure', ''],
      ['samesite', 'Lax'],
    ]);
  });

  it('drops Secure and the __Host- prefix for plain-http local development', async () => {
    const cookies = createBffCookies(single(OLD_SECRET, { COOKIE_SECURE: 'false' }));
    const session = parseSetCookie(await cookies.sessionCookie('id', 60));
    expect(session.name).toBe('idt_bff');
    expect(session.attributes.has('secure')).toBe(false);
    expect(parseSetCookie(only(await cookies.transactionCookie(TX))).name).toBe(`idt_bff_tx_${STATE.slice(0, 16)}`);
  });

  it('unseals under an older key and says so; a key no longer configured unseals nothing', async () => {
    const before = createBffCookies(single());
    const after = createBffCookies(rotated());
    const old = await before.sessionCookie('session-id', 3600);
    expect(await after.readSession(headersWith(old))).toEqual({ state: 'valid', sessionId: 'session-id', needsReseal: true });
    const fresh = await after.sessionCookie('session-id', 3600);
    expect(sealKeyId(parseSetCookie(fresh).value)).toBe('k2');
    expect(await after.readSession(headersWith(fresh))).toEqual({ state: 'valid', sessionId: 'session-id', needsReseal: false });

    const retired = createBffCookies(bffConfigFromEnv({ ...BASE_ENV, COOKIE_PASSWORDS: JSON.stringify({ k2: NEW_SECRET }) }));
    expect(await retired.readSession(headersWith(old))).toEqual({ state: 'invalid' });
  });

  it('reads a bare-secret seal (empty key id) as the key `default`', async () => {
    const sealed = await createSealer({ currentKeyId: 'x', secrets: new Map([['x', OLD_SECRET]]) }).seal({ id: 'a' }, 60_000);
    const bare = sealed.replace('*x*', '**');
    expect(sealKeyId(bare)).toBe('default');
  });

  it('re-seals a cookie found under an older key with the current key when the session is read', async () => {
    const clock = createManualClock('2026-01-01T00:00:00Z');
    const store = createMemoryBffSessionStore();
    const now = clock.now().getTime();
    await store.create(session('session-id', now));
    const oldCookie = await createBffCookies(single(), clock).sessionCookie('session-id', 86_400);
    const config = rotated();
    const sessions = createBffSessions({
      store,
      cookies: createBffCookies(config, clock),
      refresher: noRefresh,
      sessionTtlSeconds: 86_400,
      clock,
    });
    clock.advance(600_000);
    const current = await sessions.current(headersWith(oldCookie));
    expect(current.session?.id).toBe('session-id');
    expect(current.setCookie).toHaveLength(1);
    const resealed = parseSetCookie(current.setCookie[0] as string);
    expect(resealed.name).toBe('__Host-idt_bff');
    expect(sealKeyId(resealed.value)).toBe('k2');
    // The re-sealed cookie lives as long as the session has left.
    expect(resealed.attributes.get('max-age')).toBe(String(86_400 - 600));
    const again = await sessions.current(headersWith(current.setCookie[0] as string));
    expect(again.session?.id).toBe('session-id');
    expect(again.setCookie).toEqual([]);
  });

  it('treats a tampered cookie as no session and clears it', async () => {
    const clock = createManualClock();
    const config = single();
    const cookies = createBffCookies(config, clock);
    const store = createMemoryBffSessionStore();
    await store.create(session('session-id', clock.now().getTime()));
    const sessions = createBffSessions({ store, cookies, refresher: noRefresh, sessionTtlSeconds: 86_400, clock });
    const { name, value } = parseSetCookie(await cookies.sessionCookie('session-id', 86_400));
    const parts = value.split('*');
    const ciphertext = parts[4] as string;
    parts[4] = `${ciphertext.slice(0, 10)}${ciphertext[10] === 'A' ? 'B' : 'A'}${ciphertext.slice(11)}`;
    const tampered = new Headers({ cookie: `${name}=${parts.join('*')}` });
    expect(await cookies.readSession(tampered)).toEqual({ state: 'invalid' });
    const current = await sessions.current(tampered);
    expect(current).toMatchObject({ session: null, code: 'Bff.SessionMissing' });
    expect(current.setCookie).toEqual([cookies.clearSession()]);
    expect(await cookies.readSession(new Headers({ cookie: `${name}=garbage` }))).toEqual({ state: 'invalid' });
    expect(await sessions.current(new Headers())).toEqual({ session: null, code: 'Bff.SessionMissing', setCookie: [] });
  });

  it('refuses a login transaction older than 10 minutes even if the browser kept the cookie', async () => {
    const clock = createManualClock('2026-01-01T00:00:00Z');
    const cookies = createBffCookies(single(), clock);
    const headers = headersWith(only(await cookies.transactionCookie(TX)));
    clock.advance(9 * 60_000 + 59_000);
    expect(await cookies.readTransaction(headers, STATE)).toEqual(TX);
    clock.advance(1_000);
    expect(await cookies.readTransaction(headers, STATE)).toBeUndefined();
    clock.advance(1_000);
    expect(await cookies.readTransaction(headers, STATE)).toBeUndefined();
  });

  it('keeps one transaction cookie per sign-in in progress, read by its state, and clears them past four', async () => {
    const cookies = createBffCookies(single());
    const states = ['AAAAAAAAAAAAAAAAfirst', 'BBBBBBBBBBBBBBBBsecond', 'CCCCCCCCCCCCCCCCthird', 'DDDDDDDDDDDDDDDDfourth'];
    const jar: string[] = [];
    for (const state of states) {
      const values = await cookies.transactionCookie({ ...TX, state }, headersWith(...jar));
      expect(values).toHaveLength(1);
      jar.push(values[0] as string);
    }
    for (const state of states) expect((await cookies.readTransaction(headersWith(...jar), state))?.state).toBe(state);
    // Another sign-in's state names another cookie: a mismatched or absent state reads nothing.
    expect(await cookies.readTransaction(headersWith(...jar), 'EEEEEEEEEEEEEEEEfifth')).toBeUndefined();
    expect(await cookies.readTransaction(headersWith(...jar), null)).toBeUndefined();
    expect(cookies.clearTransaction(null)).toEqual([]);
    // A fifth sign-in while four are pending clears the abandoned ones.
    const fifth = await cookies.transactionCookie({ ...TX, state: 'EEEEEEEEEEEEEEEEfifth' }, headersWith(...jar));
    expect(fifth.map((value) => [parseSetCookie(value).name, parseSetCookie(value).attributes.get('max-age')])).toEqual([
      ...states.map((state) => [`__Host-idt_bff_tx_${state.slice(0, 16)}`, '0']),
      ['__Host-idt_bff_tx_EEEEEEEEEEEEEEEE', '600'],
    ]);
  });

  it('refuses a session cookie after its lifetime', async () => {
    const clock = createManualClock('2026-01-01T00:00:00Z');
    const cookies = createBffCookies(single(), clock);
    const headers = headersWith(await cookies.sessionCookie('id', 60));
    clock.advance(59_000);
    expect((await cookies.readSession(headers)).state).toBe('valid');
    clock.advance(1_000);
    expect((await cookies.readSession(headers)).state).toBe('invalid');
  });
});
