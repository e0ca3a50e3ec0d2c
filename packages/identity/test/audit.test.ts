import { type AuditEntry, defineAuditActions } from '@idt/core';
import { AUDIT_EVENTS_TABLE, verifyAuditChain } from '@idt/core/knex';
import {
  caller,
  expectJson,
  expectProblem,
  mintAccessToken,
  mintServiceToken,
  registerUser,
  seedWorld,
  startTestServer,
  type TestServer,
  testDialects,
  type World,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const Actions = defineAuditActions('tests', {
  renamed: { action: 'tests.thing.renamed', description: 'A thing was renamed.', targetType: 'thing' },
  deleted: { action: 'tests.thing.deleted', description: 'A thing was deleted.', targetType: 'thing' },
});

const PASSWORD = 'correct horse battery staple';

/**
 * The audit trail over HTTP, through the real reference server: each
 * organization reads its own trail (`AuditRead`: owners and admins), keyset
 * pages that hold under concurrent writes, streamed exports, the chain
 * check, and the password actions the identity module records.
 */
describe.each(testDialects())('the audit trail API on %s', (dialect) => {
  let server: TestServer;
  let world: World;
  let call: ReturnType<typeof caller>;

  const record = (entries: AuditEntry[]) =>
    server.database.db.transaction((trx) => server.idt.infrastructure.audit.record(entries, trx));
  const entry = (organizationId: string | null, overrides: Partial<AuditEntry> = {}): AuditEntry => ({
    action: Actions.renamed.action,
    organizationId,
    actor: { type: 'user', id: 'actor-1', display: 'ada@example.com' },
    target: { type: 'thing', id: 'thing-1', display: 'Thing' },
    metadata: { from: 'Old', to: 'New' },
    ...overrides,
  });
  const events = (token: string, query = '') => call('GET', `/v1/audit/events${query}`, { token });

  beforeAll(async () => {
    server = await startTestServer({ dialect });
    server.idt.infrastructure.audit.register(Object.values(Actions));
    world = await seedWorld(server);
    call = caller(server);
    const a = world.a.organization.id;
    const b = world.b.organization.id;
    await record([entry(a), entry(b), entry(null, { action: Actions.deleted.action })]);
    await record([
      entry(a, { action: Actions.deleted.action, outcome: 'failure', actor: { type: 'apiKey', id: 'key-7', display: null } }),
    ]);
    await record([entry(a, { target: { type: 'thing', id: 'thing-2', display: '=HYPERLINK("x")' } }), entry(b)]);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('lists the token’s organization’s records, newest first, to owners and admins', async () => {
    for (const token of [world.a.tokens.owner, world.a.tokens.admin]) {
      const page = await expectJson(await events(token));
      expect(page.items.map((item: { sequence: number }) => item.sequence)).toEqual([3, 2, 1]);
      expect(page.items.every((item: { organizationId: string }) => item.organizationId === world.a.organization.id)).toBe(true);
      expect(page.items[2]).toMatchObject({
        action: 'tests.thing.renamed',
        actor: { type: 'user', id: 'actor-1', display: 'ada@example.com' },
        target: { type: 'thing', id: 'thing-1' },
        outcome: 'success',
        prevHash: '0'.repeat(64),
      });
      expect(page.nextCursor).toBeNull();
    }
    const b = await expectJson(await events(world.b.tokens.owner));
    expect(b.items).toHaveLength(2);
  });

  it('refuses members without AuditRead (403) and callers without an organization', async () => {
    await expectProblem(await events(world.a.tokens.manager), 403, 'Auth.Forbidden');
    await expectProblem(await events(world.a.tokens.user), 403, 'Auth.Forbidden');
    await expectProblem(await call('GET', '/v1/audit/events/export', { token: world.a.tokens.user }), 403, 'Auth.Forbidden');
    await expectProblem(await call('GET', '/v1/audit/verify', { token: world.a.tokens.manager }), 403, 'Auth.Forbidden');
    expect((await events(world.outsiderToken)).status).toBe(403);
    expect((await call('GET', '/v1/audit/events')).status).toBe(401);
  });

  it('never lists, exports, counts or verifies another organization’s records (404)', async () => {
    const b = world.b.organization.id;
    for (const path of [
      `/v1/audit/events?organizationId=${b}`,
      `/v1/audit/events/export?organizationId=${b}`,
      `/v1/audit/verify?organizationId=${b}`,
      '/v1/audit/events?organizationId=platform',
    ]) {
      await expectProblem(await call('GET', path, { token: world.a.tokens.owner }), 404, 'Audit.OrganizationNotFound');
    }
    // Their own id is fine.
    expect((await events(world.a.tokens.owner, `?organizationId=${world.a.organization.id}`)).status).toBe(200);
  });

  it('lets a service account with the audit.read scope read its own organization’s trail only', async () => {
    const a = world.a.organization.id;
    const reader = await mintServiceToken(server, { clientId: `sa-audit-${dialect}`, organizationId: a, scope: 'audit.read' });
    const page = await expectJson(await events(reader));
    expect(page.items.length).toBeGreaterThan(0);
    expect(page.items.every((item: { organizationId: string }) => item.organizationId === a)).toBe(true);
    const exported = await call('GET', '/v1/audit/events/export?format=ndjson', { token: reader });
    expect(exported.status).toBe(200);
    await expectProblem(await events(reader, `?organizationId=${world.b.organization.id}`), 404, 'Audit.OrganizationNotFound');
    const without = await mintServiceToken(server, { clientId: `sa-users-${dialect}`, organizationId: a, scope: 'users.read' });
    await expectProblem(await events(without), 403, 'Auth.Forbidden');
  });

  it('lets platform administrators read any organization’s trail and the platform trail', async () => {
    const b = await expectJson(await events(world.platformToken, `?organizationId=${world.b.organization.id}`));
    expect(b.items.map((item: { organizationId: string }) => item.organizationId)).toEqual([
      world.b.organization.id,
      world.b.organization.id,
    ]);
    const platform = await expectJson(await events(world.platformToken, '?organizationId=platform&action=tests.thing.deleted'));
    expect(platform.items).toHaveLength(1);
    expect(platform.items[0]).toMatchObject({ organizationId: null, action: 'tests.thing.deleted' });
  });

  it('filters by action, actor, target, outcome and time', async () => {
    const sequences = async (query: string) =>
      (await expectJson(await events(world.a.tokens.owner, query))).items.map((item: { sequence: number }) => item.sequence);
    expect(await sequences('?action=tests.thing.deleted')).toEqual([2]);
    expect(await sequences('?actorId=key-7')).toEqual([2]);
    expect(await sequences('?targetId=thing-2')).toEqual([3]);
    expect(await sequences('?outcome=failure')).toEqual([2]);
    const [first] = (await expectJson(await events(world.a.tokens.owner, '?targetId=thing-1&outcome=success'))).items;
    expect(await sequences(`?to=${encodeURIComponent(first.occurredAt)}`)).toEqual([]);
    expect(await sequences(`?from=${encodeURIComponent(first.occurredAt)}&outcome=success`)).toEqual([3, 1]);
  });

  it('answers bad query input with 400 problem documents', async () => {
    for (const query of [
      '?limit=0',
      '?limit=1000',
      '?limit=many',
      '?outcome=maybe',
      '?action=Not%20An%20Action',
      '?from=yesterday',
      '?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z',
      '?cursor=not-a-cursor',
      '?organizationId=not-a-guid',
    ]) {
      await expectProblem(await events(world.a.tokens.owner, query), 400, 'Validation.Failed');
    }
    await expectProblem(
      await call('GET', '/v1/audit/events/export?format=xml', { token: world.a.tokens.owner }),
      400,
      'Validation.Failed',
    );
    // A cursor of another trail is refused, not followed.
    const b = await expectJson(await events(world.b.tokens.owner, '?limit=1'));
    await expectProblem(await events(world.a.tokens.owner, `?cursor=${b.nextCursor}`), 400, 'Validation.Failed');
  });

  it('pages with an opaque cursor that neither skips nor repeats while records are written', async () => {
    const a = world.a.organization.id;
    const first = await expectJson(await events(world.a.tokens.owner, '?limit=2'));
    expect(first.items.map((item: { sequence: number }) => item.sequence)).toEqual([3, 2]);
    expect(first.nextCursor).toEqual(expect.any(String));
    await record([entry(a), entry(a)]);
    const second = await expectJson(await events(world.a.tokens.owner, `?limit=2&cursor=${first.nextCursor}`));
    expect(second.items.map((item: { sequence: number }) => item.sequence)).toEqual([1]);
    expect(second.nextCursor).toBeNull();
    const fresh = await expectJson(await events(world.a.tokens.owner, '?limit=2'));
    expect(fresh.items.map((item: { sequence: number }) => item.sequence)).toEqual([5, 4]);
  });

  it('exports NDJSON and CSV, streamed, oldest first, with the hashes', async () => {
    const ndjson = await server.send(`${server.url}/v1/audit/events/export?format=ndjson`, {
      headers: { authorization: `Bearer ${world.b.tokens.admin}` },
    });
    expect(ndjson.status).toBe(200);
    expect(ndjson.headers.get('content-type')).toBe('application/x-ndjson');
    expect(ndjson.headers.get('content-length')).toBeNull();
    const lines = (await ndjson.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((line) => line.sequence)).toEqual([1, 2]);
    expect(lines[1].prevHash).toBe(lines[0].hash);

    const csv = await server.send(`${server.url}/v1/audit/events/export?format=csv&targetId=thing-2`, {
      headers: { authorization: `Bearer ${world.a.tokens.owner}` },
    });
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toContain('.csv');
    const rows = (await csv.text()).trim().split('\r\n');
    expect(rows[0]?.startsWith('id,sequence,occurredAt,organizationId,actorType')).toBe(true);
    expect(rows).toHaveLength(2);
    // A display that is a formula is neutralized for spreadsheets.
    expect(rows[1]).toContain(`"'=HYPERLINK(""x"")"`);

    const empty = await call('GET', '/v1/audit/events/export?format=csv&action=tests.nothing.happened', {
      token: world.a.tokens.owner,
    });
    expect((await empty.text()).trim().split('\r\n')).toHaveLength(1);
  });

  it('verifies the chain and names a row edited by hand', async () => {
    const b = world.b.organization.id;
    expect(await expectJson(await call('GET', '/v1/audit/verify', { token: world.b.tokens.owner }))).toMatchObject({
      organizationId: b,
      valid: true,
      checked: 2,
      broken: null,
    });
    const { db } = server.database;
    const row = await db(AUDIT_EVENTS_TABLE).where({ chain: b, seq: 2 }).first('id');
    await db(AUDIT_EVENTS_TABLE).where({ id: row.id }).update({ outcome: 'failure' });
    const result = await expectJson(await call('GET', '/v1/audit/verify', { token: world.b.tokens.owner }));
    expect(result).toMatchObject({ valid: false, broken: { sequence: 2, id: row.id, reason: 'edited' } });
    expect((await verifyAuditChain(db, b)).broken?.reason).toBe('edited');
  });

  it('records identity.password.changed on the platform trail, and nothing for a refused change', async () => {
    const email = `audit-${dialect}@example.com`;
    const userId = await registerUser(server, email, PASSWORD);
    const token = await mintAccessToken(server, { sub: userId });
    const change = (currentPassword: string) =>
      call('POST', '/v1/identity/auth/change-password', {
        token,
        body: { currentPassword, newPassword: 'violet lantern orbit meadow' },
      });
    await expectProblem(await change('not my password at all'), 400, 'PasswordChange.WrongPassword');
    const query = `?organizationId=platform&targetId=${userId}`;
    expect((await expectJson(await events(world.platformToken, query))).items).toEqual([]);
    expect((await change(PASSWORD)).status).toBe(204);
    const { items } = await expectJson(await events(world.platformToken, query));
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      action: 'identity.password.changed',
      organizationId: null,
      actor: { type: 'user', id: userId, display: email },
      target: { type: 'user', id: userId, display: email },
      outcome: 'success',
      ip: '127.0.0.1',
    });
    expect(JSON.stringify(items[0].metadata)).not.toContain('violet');
    expect((await verifyAuditChain(server.database.db, null)).valid).toBe(true);
  });

  it('records identity.password.reset by an operator', async () => {
    const userId = await registerUser(server, `operator-reset-${dialect}@example.com`, PASSWORD);
    await server.idt.services.identity.passwords.reset.setByOperator(userId, 'amber kettle drifting north');
    const { items } = await expectJson(
      await events(world.platformToken, `?organizationId=platform&targetId=${userId}&action=identity.password.reset`),
    );
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ actor: { type: 'operator', id: null }, metadata: { by: 'operator' } });
  });
});
