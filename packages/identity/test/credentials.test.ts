import { createManualClock, createMemoryMailer, newId } from '@idt/core';
import { coreMigrations, createCacheInvalidator, createEventBus, createWindowCounter } from '@idt/core/knex';
import { ProblemError } from '@idt/problem';
import { createTestDatabase, seedUser, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createApiKeyService,
  createEmailChangeService,
  createPasswordlessService,
  createSessionService,
  createTokenMac,
  formatSessionCookie,
  prefersHtml,
} from '../src/index.js';
import {
  createKnexApiKeyStore,
  createKnexEmailChangeStore,
  createKnexPasswordlessStore,
  createKnexSessionStore,
  identityMigrations,
} from '../src/knex.js';

const START = '2030-01-01T00:00:00.000Z';

/** Polls until `check` holds: mail is sent in the background, after the call that causes it answered. */
async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 3000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    // Real I/O: the next look at a send that was not awaited.
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Records the calls of a store method that services call without awaiting
 * (session activity, API key use), so a test counts the writes and waits for
 * them instead of sleeping.
 */
function recordCalls<T extends object>(store: T, method: keyof T & string) {
  const calls: Array<Promise<unknown>> = [];
  const original = store[method] as unknown as (...args: unknown[]) => Promise<unknown>;
  Object.assign(store, {
    [method]: (...args: unknown[]) => {
      const call = original.apply(store, args);
      calls.push(call);
      return call;
    },
  });
  return {
    get count() {
      return calls.length;
    },
    /** Resolves once every recorded call has finished. */
    settled: () => Promise.allSettled(calls).then(() => undefined),
  };
}

function codeOf(error: unknown): string | undefined {
  return error instanceof ProblemError ? error.code : undefined;
}

describe.each(testDialects())('credential services with a manual clock on %s', (dialect) => {
  let database: TestDatabase;
  const clock = createManualClock(START);
  const mailer = createMemoryMailer();
  const tokens = createTokenMac('a-test-secret-of-sufficient-length-0123456789');
  let services: ReturnType<typeof build>;

  function build() {
    const { db } = database;
    const storeOptions = { db, outbox: createEventBus({ db, clock }), invalidator: createCacheInvalidator({ db }) };
    const counter = createWindowCounter({ db, clock });
    const sessionStore = createKnexSessionStore(storeOptions);
    const apiKeyStore = createKnexApiKeyStore(storeOptions);
    const sessions = createSessionService({ store: sessionStore, cookieName: 'sid', clock });
    return {
      sessionTouches: recordCalls(sessionStore, 'touch'),
      apiKeyUses: recordCalls(apiKeyStore, 'markUsed'),
      sessions,
      apiKeys: createApiKeyService({ store: apiKeyStore, clock }),
      emailChange: createEmailChangeService({
        store: createKnexEmailChangeStore(storeOptions),
        counter,
        tokens,
        mailer,
        maxRequests: 3,
        windowSeconds: 3600,
        publicBaseUrl: 'https://id.example.com/idt',
        clock,
      }),
      passwordless: createPasswordlessService({
        store: createKnexPasswordlessStore(storeOptions),
        sessions,
        counter,
        tokens,
        mailer,
        publicBaseUrl: 'https://id.example.com/idt',
        clock,
      }),
    };
  }

  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations]);
    services = build();
  });
  afterAll(async () => {
    await database.destroy();
  });

  it('expires a session 24 hours after creation and prunes it', async () => {
    clock.set(START);
    const user = await seedUser(database.db);
    const { session, cookieValue } = await services.sessions.start(user.id);
    expect(session).toEqual({
      id: expect.any(String),
      createdAt: START,
      lastActivityAt: START,
      expiresAt: '2030-01-02T00:00:00.000Z',
    });
    expect(services.sessions.sessionCookieHeader(cookieValue, session.expiresAt)).toBe(
      `sid=${cookieValue}; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=86400`,
    );
    clock.advance(86_400_000 - 1);
    expect((await services.sessions.list(user.id)).map((entry) => entry.id)).toEqual([session.id]);
    expect(await services.sessions.findLiveByCookie(cookieValue)).toMatchObject({ id: session.id, userId: user.id });
    clock.advance(1);
    expect(await services.sessions.list(user.id)).toEqual([]);
    expect(await services.sessions.findByCookie(cookieValue)).toMatchObject({ id: session.id, revokedAt: null });
    expect(await services.sessions.findLiveByCookie(cookieValue)).toBeUndefined();
    // An expired session does not count against the limit.
    for (let i = 0; i < 5; i++) expect((await services.sessions.start(user.id)).evicted).toEqual([]);
    expect(await services.sessions.prune()).toBeGreaterThanOrEqual(1);
    expect(await services.sessions.findByCookie(cookieValue)).toBeUndefined();
  });

  it('finds a live session by its cookie, and no revoked one or malformed cookie', async () => {
    clock.set(START);
    const user = await seedUser(database.db);
    const { session, cookieValue } = await services.sessions.start(user.id);
    expect(await services.sessions.findLiveByCookie(cookieValue)).toMatchObject({ id: session.id, revokedAt: null });
    expect(await services.sessions.revoke(user.id, session.id)).toBe(true);
    expect(await services.sessions.findLiveByCookie(cookieValue)).toBeUndefined();
    expect(await services.sessions.findLiveByCookie('not a cookie')).toBeUndefined();
  });

  it('records session activity at most once per 60 seconds', async () => {
    clock.set(START);
    const user = await seedUser(database.db);
    const { session } = await services.sessions.start(user.id);
    const activity = async () =>
      new Date((await database.db('identity_sessions').where({ id: session.id }).first()).last_activity_at).toISOString();
    const { sessionTouches: writes } = services;
    const before = writes.count;
    clock.advance(30_000);
    services.sessions.touch(session.id);
    expect(writes.count).toBe(before);
    expect(await activity()).toBe(START);
    clock.advance(31_000);
    services.sessions.touch(session.id);
    expect(writes.count).toBe(before + 1);
    await writes.settled();
    expect(await activity()).toBe('2030-01-01T00:01:01.000Z');
    clock.advance(10_000);
    services.sessions.touch(session.id);
    expect(writes.count).toBe(before + 1);
    expect(await activity()).toBe('2030-01-01T00:01:01.000Z');
  });

  it('expires an e-mail change link after 24 hours and clears the change', async () => {
    clock.set(START);
    const user = await seedUser(database.db);
    const newEmail = `moved-${user.id.slice(-6)}@example.com`;
    await services.emailChange.request(user.id, { newEmail });
    const change = await database.db('identity_email_changes').where({ user_id: user.id }).first();
    const link = new URL(services.emailChange.confirmationLink({ id: change.id, userId: user.id, newEmail }));
    expect(link.origin + link.pathname).toBe('https://id.example.com/idt/v1/identity/auth/confirm-email-change');
    const input = {
      token: link.searchParams.get('token') as string,
      userId: user.id,
      newEmail,
    };
    clock.advance(86_400_000);
    await expect(services.emailChange.confirm(input)).rejects.toSatisfy((error) => codeOf(error) === 'EmailChange.TokenExpired');
    expect(await database.db('identity_email_changes').where({ user_id: user.id }).first()).toBeUndefined();
    await expect(services.emailChange.confirm(input)).rejects.toSatisfy((error) => codeOf(error) === 'EmailChange.InvalidToken');
  });

  it('confirms an e-mail change just before the deadline, once', async () => {
    clock.set(START);
    const user = await seedUser(database.db);
    const newEmail = `ontime-${user.id.slice(-6)}@example.com`;
    await services.emailChange.request(user.id, { newEmail });
    const change = await database.db('identity_email_changes').where({ user_id: user.id }).first();
    const token = new URL(services.emailChange.confirmationLink({ id: change.id, userId: user.id, newEmail })).searchParams.get(
      'token',
    ) as string;
    clock.advance(86_400_000 - 1);
    const results = await Promise.allSettled(
      Array.from({ length: 4 }, () => services.emailChange.confirm({ token, userId: user.id, newEmail })),
    );
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    expect((await database.db('identity_users').where({ id: user.id }).first()).email).toBe(newEmail);
  });

  it('restarts the e-mail change window once it ends', async () => {
    clock.set(START);
    const user = await seedUser(database.db);
    for (let i = 0; i < 3; i++)
      await services.emailChange.request(user.id, { newEmail: `w${i}-${user.id.slice(-6)}@example.com` });
    const refused = await services.emailChange
      .request(user.id, { newEmail: `w3-${user.id.slice(-6)}@example.com` })
      .catch((e) => e);
    expect(codeOf(refused)).toBe('RateLimit.Exceeded');
    expect((refused as ProblemError).headers['retry-after']).toBe('3600');
    clock.advance(3_600_000);
    await services.emailChange.request(user.id, { newEmail: `w4-${user.id.slice(-6)}@example.com` });
  });

  it('expires magic links after 15 minutes and codes after 10', async () => {
    clock.set(START);
    const user = await seedUser(database.db, { email: `clock-${newId().slice(-8)}@example.com` });
    await services.passwordless.requestMagicLink({ email: user.email });
    await until(async () => mailer.messages.some((message) => message.to === user.email));
    const link = /https:\S+/.exec(mailer.messages.filter((message) => message.to === user.email).at(-1)?.text ?? '')?.[0] ?? '';
    const token = new URL(link).searchParams.get('token') as string;
    clock.advance(15 * 60_000);
    await expect(services.passwordless.verifyMagicLink(token)).rejects.toSatisfy(
      (error) => codeOf(error) === 'Passwordless.InvalidToken',
    );

    await services.passwordless.requestCode({ email: user.email });
    await until(async () => mailer.messages.filter((message) => message.to === user.email).length === 2);
    const code = /\b(\d{6})\b/.exec(mailer.messages.at(-1)?.text ?? '')?.[1] as string;
    clock.advance(10 * 60_000);
    await expect(services.passwordless.verifyCode({ email: user.email, code })).rejects.toSatisfy(
      (error) => codeOf(error) === 'Passwordless.InvalidCode',
    );
    expect(await services.passwordless.prune()).toBeGreaterThanOrEqual(2);
  });

  it('records API key use at most once a minute', async () => {
    clock.set(START);
    const user = await seedUser(database.db);
    const organization = newId();
    await database.db('identity_organizations').insert({
      id: organization,
      name: 'Org',
      slug: `org-${organization}`,
      created_at: START,
      updated_at: START,
    });
    const created = await services.apiKeys.create(
      { userId: user.id, organizationId: organization, permissions: new Set(['ApiKeysCreate', 'ApiKeysRead']) },
      { name: 'k' },
    );
    expect(created.scopes).toEqual(['apikeys.read']);
    const lastUsed = async () => (await database.db('identity_api_keys').where({ id: created.keyId }).first()).last_used_at;
    const { apiKeyUses: writes } = services;
    const before = writes.count;
    services.apiKeys.markUsed(created.keyId);
    expect(writes.count).toBe(before + 1);
    await writes.settled();
    expect(new Date(await lastUsed()).toISOString()).toBe(START);
    clock.advance(59_000);
    services.apiKeys.markUsed(created.keyId);
    expect(writes.count).toBe(before + 1);
    expect(new Date(await lastUsed()).toISOString()).toBe(START);
    clock.advance(2_000);
    services.apiKeys.markUsed(created.keyId);
    expect(writes.count).toBe(before + 2);
    await writes.settled();
    expect(new Date(await lastUsed()).toISOString()).toBe('2030-01-01T00:01:01.000Z');
    expect(await services.apiKeys.findByKey(created.apiKey)).toMatchObject({ id: created.keyId, organizationId: organization });
    expect(await services.apiKeys.findByKey(`${created.apiKey.slice(0, -1)}x`)).toBeUndefined();
  });
});

describe('credential helpers', () => {
  it('prefers HTML only when the client names it', () => {
    const ask = (accept?: string) => prefersHtml(new Request('http://x/', accept ? { headers: { accept } } : {}));
    expect(ask('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8')).toBe(true);
    expect(ask('text/html')).toBe(true);
    expect(ask()).toBe(false);
    expect(ask('*/*')).toBe(false);
    expect(ask('application/json')).toBe(false);
    expect(ask('application/json, text/html;q=0.5')).toBe(false);
    expect(ask('text/html;q=0')).toBe(false);
  });

  it('formats the session cookie', () => {
    expect(formatSessionCookie('idt_session', 'v', 12.7)).toBe(
      'idt_session=v; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=12',
    );
    expect(formatSessionCookie('idt_session', 'v', -5)).toContain('Max-Age=0');
  });
});
