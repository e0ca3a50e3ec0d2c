import { createManualClock, defineEventHandler, type EventEnvelope } from '@idt/core';
import { UserSessionEvictedEvent } from '@idt/identity';
import {
  bearer,
  createTestIdt,
  mintAccessToken,
  mintServiceToken,
  seedTenant,
  seedUser,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import { validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows, expectProblem } from './credentials-support.js';

const COOKIE = 'idt_session';

describe.each(testDialects())('sessions over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let tenant: Awaited<ReturnType<typeof seedTenant>>;
  // Session expiry reads this clock.
  const clock = createManualClock();
  const evictions: Array<EventEnvelope<{ userId: string; sessionId: string; evictedAt: string }>> = [];
  const sessions = () => server.idt.services.identity.credentials.sessions;
  const cookie = (value: string, extra: Record<string, string> = {}) => ({ cookie: `${COOKIE}=${value}`, ...extra });

  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock });
    tenant = await seedTenant(server.database.db);
    server.idt.infrastructure.events.subscribe(
      defineEventHandler({
        name: 'test.collect-session-evictions',
        module: 'test',
        event: UserSessionEvictedEvent,
        handle: async (envelope) => {
          evictions.push(envelope);
        },
      }),
    );
  });
  afterAll(async () => {
    await server.close();
  });

  it('lists your own active sessions newest first and marks the current one', async () => {
    const user = await seedUser(server.database.db);
    const first = await sessions().start(user.id, { ip: '203.0.113.9', userAgent: 'vitest' });
    const second = await sessions().start(user.id);
    const token = await mintAccessToken(server, { sub: user.id, sid: second.session.id });

    const response = await server.fetch('/v1/identity/sessions', { headers: bearer(token) });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Array<Record<string, unknown>>;
    expect(body.map((entry) => [entry.id, entry.current])).toEqual([
      [second.session.id, true],
      [first.session.id, false],
    ]);
    expect(Object.keys(body[0] ?? {}).sort()).toEqual(['createdAt', 'current', 'expiresAt', 'id', 'lastActivityAt']);
    expect(new Date(String(body[1]?.expiresAt)).getTime() - new Date(String(body[1]?.createdAt)).getTime()).toBe(86_400_000);

    // The cookie of the first session authenticates too, and marks that one current.
    const byCookie = await server.fetch('/v1/identity/sessions', { headers: cookie(first.cookieValue) });
    expect(byCookie.status).toBe(200);
    const listed = (await byCookie.json()) as Array<{ id: string; current: boolean }>;
    expect(listed.find((entry) => entry.current)?.id).toBe(first.session.id);
  });

  it('stores only the SHA-256 of the cookie value', async () => {
    const user = await seedUser(server.database.db);
    const { session, cookieValue } = await sessions().start(user.id);
    expect(cookieValue).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const row = await server.database.db('identity_sessions').where({ id: session.id }).first();
    expect(JSON.stringify(row)).not.toContain(cookieValue);
    expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('answers 401 without a credential and refuses a revoked or unknown cookie', async () => {
    await expectProblem(await server.fetch('/v1/identity/sessions'), 401, 'Auth.Unauthenticated');
    await expectProblem(
      await server.fetch(`/v1/identity/sessions/${tenant.user.id}`, { method: 'DELETE' }),
      401,
      'Auth.Unauthenticated',
    );
    await expectProblem(await server.fetch('/v1/identity/auth/logout', { method: 'POST' }), 401, 'Auth.Unauthenticated');
    await expectProblem(
      await server.fetch('/v1/identity/sessions', { headers: cookie('A'.repeat(43)) }),
      401,
      'Auth.Unauthenticated',
    );
  });

  it('answers 403 to callers that are not users (service accounts)', async () => {
    const service = await mintServiceToken(server, { clientId: 'sa-acme-robot', organizationId: tenant.organization.id });
    await expectProblem(await server.fetch('/v1/identity/sessions', { headers: bearer(service) }), 403, 'Auth.Forbidden');
    await expectProblem(
      await server.fetch(`/v1/identity/sessions/${tenant.user.id}`, { method: 'DELETE', headers: bearer(service) }),
      403,
      'Auth.Forbidden',
    );
  });

  it('revokes your own session with 204, and answers 404 for another user’s, leaving it alone', async () => {
    const owner = await seedUser(server.database.db);
    const other = await seedUser(server.database.db);
    const mine = await sessions().start(owner.id);
    const theirs = await sessions().start(other.id);
    const token = await mintAccessToken(server, { sub: owner.id });

    await expectProblem(
      await server.fetch(`/v1/identity/sessions/${theirs.session.id}`, { method: 'DELETE', headers: bearer(token) }),
      404,
      'Sessions.NotFound',
    );
    const untouched = await server.database.db('identity_sessions').where({ id: theirs.session.id }).first();
    expect(untouched.revoked_at).toBeNull();
    expect((await server.fetch('/v1/identity/sessions', { headers: cookie(theirs.cookieValue) })).status).toBe(200);

    const malformed = await server.fetch('/v1/identity/sessions/not-a-guid', { method: 'DELETE', headers: bearer(token) });
    const problem = await expectProblem(malformed, 400, 'Validation.Failed');
    expect(Object.keys(problem.errors as object)).toEqual(['sessionId']);

    const revoked = await server.fetch(`/v1/identity/sessions/${mine.session.id}`, { method: 'DELETE', headers: bearer(token) });
    expect(revoked.status).toBe(204);
    const row = await server.database.db('identity_sessions').where({ id: mine.session.id }).first();
    expect(row.revoked_at).not.toBeNull();
    expect(row.revoked_reason).toBe('revoked');
    // Gone from the list, its cookie refused, and a second delete is a 404.
    expect(await sessions().list(owner.id)).toEqual([]);
    await expectProblem(
      await server.fetch('/v1/identity/sessions', { headers: cookie(mine.cookieValue) }),
      401,
      'Auth.Unauthenticated',
    );
    await expectProblem(
      await server.fetch(`/v1/identity/sessions/${mine.session.id}`, { method: 'DELETE', headers: bearer(token) }),
      404,
      'Sessions.NotFound',
    );
  });

  it('refuses a token minted under a session once that session is revoked', async () => {
    const user = await seedUser(server.database.db);
    const { session } = await sessions().start(user.id);
    const token = await mintAccessToken(server, { sub: user.id, sid: session.id });
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(token) })).status).toBe(200);

    const deleted = await server.fetch(`/v1/identity/sessions/${session.id}`, { method: 'DELETE', headers: bearer(token) });
    expect(deleted.status).toBe(204);
    expect(deleted.headers.get('set-cookie')).toMatch(new RegExp(`^${COOKIE}=;.*Max-Age=0`));
    const after = await server.fetch('/v1/identity/sessions', { headers: bearer(token) });
    await expectProblem(after, 401, 'Auth.Unauthenticated');
    expect(await countRows(server, 'identity_token_revocations', { subject_type: 'session', subject_id: session.id })).toBe(1);
    // A token of another session of the same user still works.
    const other = await sessions().start(user.id);
    const otherToken = await mintAccessToken(server, { sub: user.id, sid: other.session.id });
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(otherToken) })).status).toBe(200);
  });

  it('revokes the oldest session on the 6th login and delivers its UserSessionEvictedEvent', async () => {
    const user = await seedUser(server.database.db);
    const started = [];
    for (let i = 0; i < 6; i++) started.push(await sessions().start(user.id));
    const oldest = started[0]?.session.id as string;
    expect(started[5]?.evicted).toEqual([oldest]);

    const rows = await server.database.db('identity_sessions').where({ user_id: user.id }).orderBy(['created_at', 'id']);
    expect(rows.map((row) => [row.id, row.revoked_at === null, row.revoked_reason])).toEqual(
      started.map((entry, index) => [entry.session.id, index !== 0, index === 0 ? 'evicted' : null]),
    );
    expect((await sessions().list(user.id)).map((session) => session.id)).toEqual(
      started
        .slice(1)
        .map((entry) => entry.session.id)
        .reverse(),
    );
    await expectProblem(
      await server.fetch('/v1/identity/sessions', { headers: cookie(started[0]?.cookieValue as string) }),
      401,
      'Auth.Unauthenticated',
    );

    const stored = await server.database.db('core_outbox_events').where({ type: 'UserSessionEvictedEvent' });
    const payloads = stored.map((row) => JSON.parse(row.payload) as Record<string, string>);
    expect(payloads.filter((payload) => payload.userId === user.id)).toEqual([
      { userId: user.id, sessionId: oldest, evictedAt: started[5]?.session.createdAt },
    ]);
    await server.idt.infrastructure.events.dispatchPending();
    expect(evictions.filter((envelope) => envelope.payload.userId === user.id).map((envelope) => envelope.payload)).toEqual([
      { userId: user.id, sessionId: oldest, evictedAt: started[5]?.session.createdAt },
    ]);
  });

  it('never leaves more than 5 active sessions under 8 concurrent logins of one user', async () => {
    const user = await seedUser(server.database.db);
    const results = await Promise.all(Array.from({ length: 8 }, () => sessions().start(user.id)));
    expect(await sessions().list(user.id)).toHaveLength(5);
    expect(results.flatMap((result) => result.evicted)).toHaveLength(3);
    expect(await countRows(server, 'identity_sessions', { user_id: user.id, revoked_reason: 'evicted' })).toBe(3);
    const events = await server.database.db('core_outbox_events').where({ type: 'UserSessionEvictedEvent' });
    expect(events.filter((row) => (JSON.parse(row.payload) as { userId: string }).userId === user.id)).toHaveLength(3);
  });

  it('refuses to start a session for a deactivated user', async () => {
    const user = await seedUser(server.database.db, { status: 'deactivated' });
    await expect(sessions().start(user.id)).rejects.toThrow(/deactivated/);
    expect(await countRows(server, 'identity_sessions', { user_id: user.id })).toBe(0);
  });

  it('signs out with the cookie from the sign-in origin only, clearing the cookie', async () => {
    const user = await seedUser(server.database.db);
    const { session, cookieValue } = await sessions().start(user.id);
    await expectProblem(
      await server.fetch('/v1/identity/auth/logout', { method: 'POST', headers: cookie(cookieValue) }),
      403,
      'Auth.Forbidden',
    );
    await expectProblem(
      await server.fetch('/v1/identity/auth/logout', {
        method: 'POST',
        headers: cookie(cookieValue, { origin: 'https://evil.example' }),
      }),
      403,
      'Auth.Forbidden',
    );
    const response = await server.fetch('/v1/identity/auth/logout', {
      method: 'POST',
      headers: cookie(cookieValue, { origin: server.origin }),
    });
    expect(response.status).toBe(204);
    const setCookie = response.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(new RegExp(`^${COOKIE}=;`));
    for (const attribute of ['HttpOnly', 'Secure', 'SameSite=Lax', 'Path=/', 'Max-Age=0']) expect(setCookie).toContain(attribute);
    const row = await server.database.db('identity_sessions').where({ id: session.id }).first();
    expect(row.revoked_reason).toBe('logout');
    await expectProblem(
      await server.fetch('/v1/identity/sessions', { headers: cookie(cookieValue) }),
      401,
      'Auth.Unauthenticated',
    );
  });

  it('signs out with a bearer token: its session and tokens end', async () => {
    const user = await seedUser(server.database.db);
    const { session } = await sessions().start(user.id);
    const token = await mintAccessToken(server, { sub: user.id, sid: session.id });
    const response = await server.fetch('/v1/identity/auth/logout', { method: 'POST', headers: bearer(token) });
    expect(response.status).toBe(204);
    await expectProblem(await server.fetch('/v1/identity/sessions', { headers: bearer(token) }), 401, 'Auth.Unauthenticated');
    // Without a session (no sid) sign-out only clears the cookie.
    const plain = await mintAccessToken(server, { sub: user.id });
    expect((await server.fetch('/v1/identity/auth/logout', { method: 'POST', headers: bearer(plain) })).status).toBe(204);
  });

  it('prunes revoked and expired sessions', async () => {
    const user = await seedUser(server.database.db);
    const revoked = await sessions().start(user.id);
    const expired = await sessions().start(user.id);
    clock.advance(1);
    const live = await sessions().start(user.id);
    await sessions().revoke(user.id, revoked.session.id);
    const listed = async () => (await sessions().list(user.id)).map((entry) => entry.id).sort();
    expect(await listed()).toEqual([expired.session.id, live.session.id].sort());
    // Sessions last 24 hours: `expired` ends now, `live` a millisecond later.
    clock.advance(86_400_000 - 1);
    expect(await listed()).toEqual([live.session.id]);
    expect(await sessions().prune()).toBeGreaterThanOrEqual(2);
    const left = await server.database.db('identity_sessions').where({ user_id: user.id }).pluck('id');
    expect(left).toEqual([live.session.id]);
  });

  it('documents every credentials route in /openapi/v1.json', async () => {
    const document = (await (await server.fetch('/openapi/v1.json')).json()) as Record<string, any>;
    const result = await validate(structuredClone(document) as Parameters<typeof validate>[0]);
    expect(result.valid ? [] : result.errors).toEqual([]);
    const operations = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations).toEqual(
      expect.arrayContaining([
        'GET /v1/identity/sessions',
        'DELETE /v1/identity/sessions/{sessionId}',
        'POST /v1/identity/auth/logout',
        'POST /v1/identity/auth/keys',
        'GET /v1/identity/auth/keys',
        'DELETE /v1/identity/auth/keys/{keyId}',
        'POST /v1/identity/auth/change-email',
        'GET /v1/identity/auth/confirm-email-change',
        'POST /v1/identity/auth/passwordless/magic-link',
        'GET /v1/identity/auth/passwordless/magic-link/verify',
        'POST /v1/identity/auth/passwordless/magic-link/verify',
        'POST /v1/identity/auth/passwordless/code',
        'POST /v1/identity/auth/passwordless/code/verify',
      ]),
    );
    const codes = document.components.schemas.ErrorCode.enum as string[];
    expect(codes).toEqual(
      expect.arrayContaining([
        'Sessions.NotFound',
        'ApiKeys.NotFound',
        'ApiKeys.LimitReached',
        'ApiKeys.ScopeExceedsPermissions',
        'ApiKeys.OrganizationRequired',
        'Passwordless.InvalidToken',
        'Passwordless.InvalidCode',
      ]),
    );
  });
});
