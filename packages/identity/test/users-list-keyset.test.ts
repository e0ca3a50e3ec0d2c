import { newId } from '@idt/core';
import { dialectOf } from '@idt/core/knex';
import {
  connectTestDatabase,
  createTestIdt,
  mintAccessToken,
  seedMembership,
  seedOrganization,
  seedTenant,
  seedUser,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, expectProblem } from './accounts-helpers.js';

type UsersPage = {
  items: Array<{ id: string }>;
  totalCount: number;
  page: number;
  pageSize: number;
  totalPages: number;
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  nextCursor: string | null;
};

/** Inserts `count` members into an organization; every third pair shares a `created_at` (ties break by membership id). */
async function addMembers(db: Knex, organizationId: string, count: number, start = Date.parse('2026-01-01T00:00:00Z')) {
  const userIds: string[] = [];
  for (let index = 0; index < count; index++) {
    const user = await seedUser(db, { firstName: `Member${index}` });
    const at = new Date(start + Math.floor(index / 2) * 1000).toISOString();
    await db('identity_memberships').insert({
      id: newId(),
      organization_id: organizationId,
      user_id: user.id,
      status: 'active',
      created_at: at,
      updated_at: at,
    });
    userIds.push(user.id);
  }
  return userIds;
}

describe.each(testDialects())('the users list at scale on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let db: Knex;
  let alpha: { id: string };
  let beta: { id: string };
  let alphaToken: string;
  let betaToken: string;
  /** Alpha's members in list order (membership created_at, then membership id). */
  let alphaOrder: string[];

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    call = caller(server);
    db = server.database.db;
    alpha = await seedOrganization(db, { name: 'Alpha' });
    beta = await seedOrganization(db, { name: 'Beta' });
    const reader = await seedUser(db, { firstName: 'Rita', lastName: 'Reader' });
    await addMembers(db, alpha.id, 56);
    await addMembers(db, beta.id, 7);
    for (const organization of [alpha, beta]) {
      const id = newId();
      await db('identity_memberships').insert({
        id,
        organization_id: organization.id,
        user_id: reader.id,
        status: 'active',
        created_at: '2030-01-01T00:00:00.000Z',
        updated_at: '2030-01-01T00:00:00.000Z',
      });
      await db('identity_membership_roles').insert({ membership_id: id, role: 'admin' });
    }
    alphaToken = await mintAccessToken(server, { sub: reader.id, org_id: alpha.id });
    betaToken = await mintAccessToken(server, { sub: reader.id, org_id: beta.id });
    const rows: Array<{ user_id: string }> = await db('identity_memberships')
      .where({ organization_id: alpha.id })
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .select('user_id');
    alphaOrder = rows.map((row) => row.user_id);
  });
  afterAll(async () => {
    await server.close();
  });

  const list = async (query: string, token = alphaToken): Promise<UsersPage> =>
    expectJson(await call('GET', `/v1/identity/users?${query}`, { token }));

  it('walks every member once with nextCursor, in the same order and pages as page=N', async () => {
    const seen: string[] = [];
    let page = await list('pageSize=10');
    const pages: UsersPage[] = [page];
    while (page.nextCursor) {
      page = await list(`pageSize=10&cursor=${page.nextCursor}`);
      pages.push(page);
    }
    for (const each of pages) seen.push(...each.items.map((user) => user.id));
    expect(seen).toEqual(alphaOrder);
    expect(pages.map((each) => each.page)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(pages.at(-1)).toMatchObject({ totalCount: 57, totalPages: 6, hasNextPage: false, nextCursor: null });
    expect(pages[2]).toMatchObject({ hasPreviousPage: true, hasNextPage: true, totalCount: 57 });
    for (const each of pages) {
      const byOffset = await list(`pageSize=10&page=${each.page}`);
      expect(byOffset.items.map((user) => user.id)).toEqual(each.items.map((user) => user.id));
      expect(byOffset.hasNextPage).toBe(each.hasNextPage);
    }
  });

  it('keeps totalCount exact through inserts, moves and deletes of memberships, whoever writes them', async () => {
    const before = (await list('pageSize=1')).totalCount;
    const [added] = await addMembers(db, alpha.id, 1, Date.parse('2031-01-01T00:00:00Z'));
    expect((await list('pageSize=1')).totalCount).toBe(before + 1);
    expect((await list('pageSize=1', betaToken)).totalCount).toBe(8);
    await db('identity_memberships').where({ user_id: added, organization_id: alpha.id }).update({ organization_id: beta.id });
    expect((await list('pageSize=1')).totalCount).toBe(before);
    expect((await list('pageSize=1', betaToken)).totalCount).toBe(9);
    await db('identity_memberships').where({ user_id: added }).delete();
    expect((await list('pageSize=1', betaToken)).totalCount).toBe(8);
    const counted = await db('identity_memberships').where({ organization_id: alpha.id }).count({ n: '*' }).first();
    expect(Number(counted?.n)).toBe(before);
  });

  it('stays inside the token organization whatever cursor it is given', async () => {
    const alphaCursor = (await list('pageSize=5')).nextCursor as string;
    const page = await list(`pageSize=50&cursor=${alphaCursor}`, betaToken);
    const betaMembers: string[] = await db('identity_memberships').where({ organization_id: beta.id }).pluck('user_id');
    for (const user of page.items) expect(betaMembers).toContain(user.id);
  });

  it('answers 400 Validation.Failed for a cursor it did not write, and changes nothing', async () => {
    for (const cursor of ['nope', Buffer.from('[1,"a","b"]').toString('base64url'), 'x'.repeat(400), '']) {
      const problem = await expectProblem(
        await call('GET', `/v1/identity/users?cursor=${encodeURIComponent(cursor)}`, { token: alphaToken }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors)).toEqual(['cursor']);
    }
  });

  it('reads the page from the (organization_id, created_at, id) index and the total from the counts table', async () => {
    const statements: Array<{ sql: string; bindings: readonly unknown[] }> = [];
    const capture = (query: { sql: string; bindings?: readonly unknown[] }) =>
      statements.push({ sql: query.sql, bindings: query.bindings ?? [] });
    const cursor = (await list('pageSize=10')).nextCursor as string;
    db.on('query', capture);
    try {
      await list('pageSize=10&page=3');
      await list(`pageSize=10&cursor=${cursor}`);
    } finally {
      db.off('query', capture);
    }
    const reads = statements.filter((statement) => /identity_memberships|identity_organization_counts/.test(statement.sql));
    // One statement per page: the total is a column of it.
    expect(reads.length).toBe(2);
    expect(reads.some((statement) => /count\(/i.test(statement.sql))).toBe(false);
    for (const statement of reads) {
      const plan = await explain(db, statement.sql, statement.bindings);
      if (/identity_memberships/.test(statement.sql)) {
        expect(plan, statement.sql).toContain('identity_memberships_org_created_id_index');
        // From the start or from a cursor, rows come in index order: no sort of the organization's members.
        if (dialectOf(db) === 'sqlite' && !/ in \(select/i.test(statement.sql))
          expect(plan, statement.sql).not.toMatch(/TEMP B-TREE/);
        // The cursor's key is a range of the index (where the page starts), not a filter over the rows before it.
        if (/\(m\.created_at, m\.id\) >/.test(statement.sql))
          expect(plan, statement.sql).toMatch(
            dialectOf(db) === 'sqlite'
              ? /identity_memberships_org_created_id_index \(organization_id=\? AND \(created_at,id\)>\(\?,\?\)\)/
              : /Index Cond: \(\(+organization_id\)?(::text)? = .*ROW\(created_at, \(?id\)?(::text)?\) > ROW/,
          );
      }
      expect(plan, statement.sql).not.toMatch(/(Seq Scan on|SCAN) identity_(memberships|organization_counts)\b(?! USING)/);
    }
  });
});

/** The query plan of a statement as text: SQLite's EXPLAIN QUERY PLAN, Postgres' EXPLAIN with sequential scans discouraged. */
async function explain(db: Knex, sql: string, bindings: readonly unknown[]): Promise<string> {
  if (dialectOf(db) === 'sqlite') {
    const rows: Array<{ detail: string }> = await db.raw(`explain query plan ${sql}`, bindings as Knex.RawBinding[]);
    return rows.map((row) => row.detail).join('\n');
  }
  return db.transaction(async (trx) => {
    // Tiny test tables make every scan cheap; with sequential scans priced out, a missing index shows.
    await trx.raw('set local enable_seqscan = off');
    const result = await trx.raw(`explain ${sql.replace(/\$\d+/g, '?')}`, bindings as Knex.RawBinding[]);
    return (result.rows as Array<{ 'QUERY PLAN': string }>).map((row) => row['QUERY PLAN']).join('\n');
  });
}

describe.each(testDialects())('users from memory (GET /users/me and the users list) on %s', (dialect) => {
  let first: TestIdt;
  let second: TestIdt;
  let token: string;
  let secondToken: string;
  let userId: string;
  /** The tenant owner's tokens on each instance, for the users list. */
  let listTokens: Map<TestIdt, string>;

  beforeAll(async () => {
    first = await createTestIdt({ dialect });
    const tenant = await seedTenant(first.database.db, 'Setup done');
    // A second instance with its own pool on the same database: the profile it keeps must follow writes made by the first.
    second = await createTestIdt({ database: connectTestDatabase(first.database) });
    const user = await seedUser(first.database.db, { firstName: 'Ada', lastName: 'Lovelace' });
    userId = user.id;
    token = await mintAccessToken(first, { sub: userId });
    // Each instance verifies through its own caches; the signing keys are the shared database's.
    secondToken = await mintAccessToken(second, { sub: userId });
    await seedMembership(first.database.db, { userId, organizationId: tenant.organization.id, roles: ['user'] });
    listTokens = new Map();
    for (const server of [first, second])
      listTokens.set(server, await mintAccessToken(server, { sub: tenant.owner.id, org_id: tenant.organization.id }));
  });
  afterAll(async () => {
    await second.close();
    await second.database.destroy();
    await first.close();
  });

  const me = async (server: TestIdt) =>
    expectJson(await caller(server)('GET', '/v1/identity/users/me', { token: server === first ? token : secondToken }));

  it('serves a profile change at once on the instance that made it and on the next request elsewhere', async () => {
    expect(await me(first)).toMatchObject({ id: userId, firstName: 'Ada' });
    expect(await me(second)).toMatchObject({ id: userId, firstName: 'Ada' });
    const patched = await expectJson(
      await caller(first)('PATCH', '/v1/identity/users/me', { token, body: { firstName: 'Augusta' } }),
    );
    expect(patched.firstName).toBe('Augusta');
    expect(await me(first)).toMatchObject({ firstName: 'Augusta' });
    await expect.poll(async () => (await me(second)).firstName, { timeout: 5000, interval: 50 }).toBe('Augusta');
  });

  const listed = async (server: TestIdt) => {
    const page = (await expectJson(
      await caller(server)('GET', '/v1/identity/users?pageSize=100', { token: listTokens.get(server) as string }),
    )) as { items: Array<{ id: string; firstName: string }> };
    return page.items.find((item) => item.id === userId);
  };

  it('lists users from memory: a page read again reads no user row, and follows a profile change on every instance', async () => {
    const readsOf = async (server: TestIdt) => {
      const statements: string[] = [];
      const capture = (query: { sql: string }) => statements.push(query.sql);
      server.database.db.on('query', capture);
      try {
        expect(await listed(server)).toMatchObject({ firstName: expect.any(String) });
      } finally {
        server.database.db.off('query', capture);
      }
      return {
        memberships: statements.filter((sql) => /identity_memberships/.test(sql)).length,
        users: statements.filter((sql) => /\bidentity_users\b/.test(sql)).length,
      };
    };
    // The first read on an instance loads what it lacks (the caller's access too); the next read of the
    // page reads its memberships and no user.
    expect((await readsOf(second)).users).toBeGreaterThan(0);
    expect(await readsOf(second)).toEqual({ memberships: 1, users: 0 });
    await readsOf(first);
    expect(await readsOf(first)).toEqual({ memberships: 1, users: 0 });

    const before = (await listed(second))?.firstName;
    const renamed = `${before}-renamed`;
    await expectJson(await caller(first)('PATCH', '/v1/identity/users/me', { token, body: { firstName: renamed } }));
    expect((await listed(first))?.firstName).toBe(renamed);
    await expect.poll(async () => (await listed(second))?.firstName, { timeout: 5000, interval: 50 }).toBe(renamed);
  });

  it('does not keep an unknown user: a user created after a miss is found', async () => {
    const ghostId = newId();
    const ghostToken = await mintAccessToken(first, { sub: ghostId });
    const missing = await caller(first)('GET', '/v1/identity/users/me', { token: ghostToken });
    expect(missing.status).toBe(401);
    expect(await first.database.db('identity_users').where({ id: ghostId }).first()).toBeUndefined();
  });
});
