import { createMemoryMailer, silentLogger, systemClock } from '@idt/core';
import { coreMigrations, createCacheInvalidator, createDatabase, createEventBus, createWindowCounter } from '@idt/core/knex';
import { createTestDatabase, seedMembership, seedOrganization, seedUser, type TestDatabase, testDialects } from '@idt/testing';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AccountsActor, createArgon2Hasher, createTokenMac, INVITATION_TOKEN_PURPOSE, PERMISSIONS } from '../src/index.js';
import { createAccountsFeature, identityMigrations } from '../src/knex.js';

const SECRET = 'accounts-race-test-secret';

/** The accounts feature over one connection pool, as one server instance would have it. */
function accountsOn(db: Knex) {
  return createAccountsFeature({
    db,
    settings: {
      environment: 'Testing',
      publicBaseUrl: 'http://127.0.0.1',
      authUrl: 'http://127.0.0.1/auth',
      sessionCookieName: 'idt_session',
      emailChangeMaxRequests: 3,
      emailChangeWindowSeconds: 3600,
    },
    clock: systemClock,
    logger: silentLogger,
    hasher: createArgon2Hasher(),
    mailer: createMemoryMailer(),
    outbox: createEventBus({ db }),
    invalidator: createCacheInvalidator({ db }),
    counter: createWindowCounter({ db }),
    tokens: createTokenMac(SECRET),
    permissionsOf: async () => new Set(),
  }).services;
}

const everything = new Set<string>(PERMISSIONS);
const actor = (userId: string, organizationId: string): AccountsActor => ({ userId, organizationId, permissions: everything });

function settle<T>(work: Array<Promise<T>>) {
  return Promise.allSettled(work).then((results) => ({
    won: results
      .filter((result): result is PromiseFulfilledResult<Awaited<T>> => result.status === 'fulfilled')
      .map((r) => r.value),
    codes: results
      .filter((result): result is PromiseRejectedResult => result.status === 'rejected')
      .map((result) => (result.reason as { code?: string }).code ?? String(result.reason)),
  }));
}

describe.each(testDialects())('accounts under concurrency on %s', (dialect) => {
  let database: TestDatabase;
  let other: Knex;
  let services: [ReturnType<typeof accountsOn>, ReturnType<typeof accountsOn>];

  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations]);
    other = createDatabase(database.url);
    // Two instances over two pools on Postgres, used alternately. SQLite's
    // busy wait blocks the thread, so two pools in one process would wait on
    // each other; there one pool serializes the interleaved calls, as in a server.
    services = [accountsOn(database.db), accountsOn(dialect === 'postgres' ? other : database.db)];
  });
  afterAll(async () => {
    await other.destroy();
    await database.destroy();
  });

  const count = async (table: string, where: Record<string, unknown>) =>
    Number((await database.db(table).where(where).count({ n: '*' }).first())?.n);

  async function ownersOf(organizationId: string): Promise<number> {
    return Number(
      (
        await database
          .db('identity_memberships as m')
          .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
          .where({ 'm.organization_id': organizationId, 'm.status': 'active', 'r.role': 'owner' })
          .count({ n: '*' })
          .first()
      )?.n,
    );
  }

  async function twoOwners() {
    const db = database.db;
    const organization = await seedOrganization(db);
    const [x, y] = [await seedUser(db), await seedUser(db)];
    for (const user of [x, y]) await seedMembership(db, { userId: user.id, organizationId: organization.id, roles: ['owner'] });
    return { organization, x, y };
  }

  it('never lets two owners demoting each other leave the organization without an owner', async () => {
    for (let round = 0; round < 4; round++) {
      const { organization, x, y } = await twoOwners();
      const { won, codes } = await settle([
        services[0].memberships.setRoles(actor(x.id, organization.id), organization.id, y.id, { roles: ['admin'] }),
        services[1].memberships.setRoles(actor(y.id, organization.id), organization.id, x.id, { roles: ['admin'] }),
      ]);
      expect(won).toHaveLength(1);
      expect(['Identity.LastOwner', 'Auth.Forbidden']).toContain(codes[0]);
      expect(await ownersOf(organization.id)).toBe(1);
    }
  });

  it('lets exactly one of two owners stepping down, or leaving, at once go', async () => {
    for (const action of ['demote', 'leave', 'suspend'] as const) {
      const { organization, x, y } = await twoOwners();
      const run = (index: number, userId: string) => {
        const memberships = services[index as 0 | 1].memberships;
        const who = actor(userId, organization.id);
        if (action === 'demote') return memberships.setRoles(who, organization.id, userId, { roles: ['admin'] });
        if (action === 'leave') return memberships.remove(who, organization.id, userId);
        return memberships.suspend(who, organization.id, userId);
      };
      const { won, codes } = await settle<unknown>([run(0, x.id), run(1, y.id)]);
      expect(won).toHaveLength(1);
      expect(codes).toEqual(['Identity.LastOwner']);
      expect(await ownersOf(organization.id)).toBe(1);
    }
  });

  it('lets exactly one of concurrent acceptances of an invitation win', async () => {
    const db = database.db;
    const { organization, x } = await twoOwners();
    const invitee = await seedUser(db, { email: `invitee-${dialect}@example.com` });
    const invitation = await services[0].invitations.create(actor(x.id, organization.id), organization.id, {
      email: invitee.email,
      roles: ['manager'],
    });
    const token = createTokenMac(SECRET).issue(INVITATION_TOKEN_PURPOSE, invitation.id);
    const caller: AccountsActor = { userId: invitee.id, organizationId: null, permissions: new Set() };
    const { won, codes } = await settle(
      [0, 1, 0, 1].map((index) => services[index as 0 | 1].invitations.accept(caller, { token })),
    );
    expect(won).toHaveLength(1);
    expect(won[0]?.membership).toMatchObject({ status: 'active', roles: ['manager'] });
    expect(codes).toEqual(['Identity.InvitationInvalid', 'Identity.InvitationInvalid', 'Identity.InvitationInvalid']);
    expect(await count('identity_memberships', { user_id: invitee.id })).toBe(1);
    expect(await count('core_outbox_events', { type: 'InvitationAcceptedEvent' })).toBe(1);
  });

  it('enrolls once under concurrency, by the organization’s policy', async () => {
    const db = database.db;
    const expected = { open: 'active', approval_required: 'pending', invitation_only: 'not_a_member' } as const;
    for (const policy of ['open', 'approval_required', 'invitation_only'] as const) {
      const organization = await seedOrganization(db, { enrollmentPolicy: policy });
      const user = await seedUser(db);
      const outcomes = await Promise.all(
        [0, 1, 0, 1].map((index) => services[index as 0 | 1].memberships.enroll(user.id, organization.id)),
      );
      expect(outcomes).toEqual(Array(4).fill(expected[policy]));
      expect(await count('identity_memberships', { user_id: user.id })).toBe(policy === 'invitation_only' ? 0 : 1);
      const rows = await db('identity_memberships').where({ user_id: user.id }).first();
      if (policy === 'approval_required') expect(rows.requested_at).not.toBeNull();
      const events = await db('core_outbox_events')
        .whereIn('type', ['MemberJoinedEvent', 'MembershipRequestedEvent'])
        .select('payload');
      expect(events.filter((event: { payload: string }) => event.payload.includes(user.id))).toHaveLength(
        policy === 'invitation_only' ? 0 : 1,
      );
    }
  });

  it('returns an existing membership’s state from enroll, and refuses unknown organizations', async () => {
    const db = database.db;
    const organization = await seedOrganization(db, { enrollmentPolicy: 'open' });
    const user = await seedUser(db);
    await seedMembership(db, { userId: user.id, organizationId: organization.id, status: 'suspended' });
    expect(await services[0].memberships.enroll(user.id, organization.id)).toBe('suspended');
    await expect(services[0].memberships.enroll(user.id, '0190a000-0000-7000-8000-000000000000')).rejects.toMatchObject({
      code: 'Identity.OrganizationNotFound',
      status: 404,
    });
    const suspendedOrganization = await seedOrganization(db, { enrollmentPolicy: 'open', status: 'suspended' });
    expect(await services[1].memberships.enroll(user.id, suspendedOrganization.id)).toBe('not_a_member');
  });

  it('gives concurrently created organizations of one name distinct slugs, across pools', async () => {
    const db = database.db;
    const users = [await seedUser(db), await seedUser(db), await seedUser(db), await seedUser(db)];
    const created = await Promise.all(
      users.map((user, index) =>
        services[(index % 2) as 0 | 1].organizations.create(
          { userId: user.id, organizationId: null, permissions: new Set() },
          {
            name: `Race ${dialect}`,
          },
        ),
      ),
    );
    expect(created.map((organization) => organization.slug).sort()).toEqual([
      `race-${dialect}`,
      `race-${dialect}-2`,
      `race-${dialect}-3`,
      `race-${dialect}-4`,
    ]);
  });
});
