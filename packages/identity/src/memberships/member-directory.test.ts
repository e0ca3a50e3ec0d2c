import { newId } from '@idt/core';
import { coreMigrations } from '@idt/core/knex';
import {
  createTestDatabase,
  type SeededUser,
  seedMembership,
  seedOrganization,
  seedUser,
  type TestDatabase,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKnexMemberDirectoryStore, membersWithPermission } from '../knex/members-with-permission.js';
import { identityMigrations } from '../knex/migrations.js';
import { createMemberDirectory, type MemberDirectory } from './member-directory.js';

describe.each(testDialects())('the member directory on %s', (dialect) => {
  let database: TestDatabase;
  let members: MemberDirectory;
  let acme: { id: string };
  let beta: { id: string };
  const people: Record<string, SeededUser> = {};

  const customRole = (organizationId: string, name: string, permissions: string[]) =>
    database.db('identity_roles').insert({
      id: newId(),
      organization_id: organizationId,
      name,
      description: '',
      permissions: JSON.stringify(permissions),
      created_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
    });
  const ids = (found: ReadonlyArray<{ userId: string; organizationId: string }>) =>
    found.map((member) => `${member.organizationId === acme.id ? 'acme' : 'beta'}:${nameOf(member.userId)}`);
  const nameOf = (userId: string) => Object.entries(people).find(([, user]) => user.id === userId)?.[0];

  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations]);
    const db = database.db;
    members = createMemberDirectory(createKnexMemberDirectoryStore(db));
    acme = await seedOrganization(db, { name: 'Acme' });
    beta = await seedOrganization(db, { name: 'Beta' });
    const closed = await seedOrganization(db, { name: 'Closed', status: 'suspended' });
    for (const name of ['owner', 'manager', 'user', 'support', 'suspended', 'pending', 'twoRoles', 'betaAdmin', 'betaSupport']) {
      people[name] = await seedUser(db, { email: `${name.toLowerCase()}@example.com` });
    }
    people.gone = await seedUser(db, { email: 'gone@example.com', status: 'deactivated' });
    const member = (name: string, organizationId: string, roles: string[], status?: 'active' | 'pending' | 'suspended') =>
      seedMembership(db, { userId: (people[name] as SeededUser).id, organizationId, roles, ...(status ? { status } : {}) });
    await member('owner', acme.id, ['owner']);
    await member('manager', acme.id, ['Manager']);
    await member('user', acme.id, ['user']);
    await member('support', acme.id, ['Support']);
    await member('suspended', acme.id, ['admin'], 'suspended');
    await member('pending', acme.id, ['manager'], 'pending');
    await member('gone', acme.id, ['owner']);
    await member('twoRoles', acme.id, ['manager', 'support']);
    await member('betaAdmin', beta.id, ['admin']);
    await member('betaSupport', beta.id, ['support']);
    await member('owner', closed.id, ['owner']);
    // A role of one organization grants nothing in another, whatever its name.
    await customRole(acme.id, 'Support', ['InquiriesRead']);
    await customRole(beta.id, 'support', ['UsersRead']);
  });
  afterAll(async () => {
    await database?.destroy();
  });

  const sorted = (names: string[]) => [...names].sort();

  it('finds the active members of an organization whose built-in or custom roles grant the permission, one entry per membership', async () => {
    const found = await members.withPermission('InquiriesRead', { organizationId: acme.id });
    expect(sorted(ids(found))).toEqual(sorted(['acme:owner', 'acme:manager', 'acme:support', 'acme:twoRoles']));
    expect(found.find((entry) => entry.userId === people.owner?.id)).toEqual({
      userId: people.owner?.id,
      organizationId: acme.id,
      email: 'owner@example.com',
    });
  });

  it('orders by organization, then user', async () => {
    const found = await members.withPermission('UsersRead', { organizationId: null });
    const keys = found.map((entry) => [entry.organizationId, entry.userId] as const);
    const expected = [...keys].sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
    expect(keys).toEqual(expected);
  });

  it('reads every active organization when none is given, and keeps each organization’s custom roles to itself', async () => {
    const inquiries = await members.withPermission('InquiriesRead', { organizationId: null });
    expect(sorted(ids(inquiries))).toEqual(
      sorted(['acme:owner', 'acme:manager', 'acme:support', 'acme:twoRoles', 'beta:betaAdmin']),
    );
    const users = await members.withPermission('UsersRead', { organizationId: beta.id });
    expect(sorted(ids(users))).toEqual(sorted(['beta:betaAdmin', 'beta:betaSupport']));
  });

  it('narrows to a role, case-insensitively', async () => {
    expect(sorted(ids(await members.withPermission('InquiriesRead', { organizationId: acme.id, role: 'MANAGER' })))).toEqual(
      sorted(['acme:manager', 'acme:twoRoles']),
    );
    expect(ids(await members.withPermission('InquiriesRead', { organizationId: acme.id, role: 'user' }))).toEqual([]);
    expect(ids(await members.withPermission('InquiriesRead', { organizationId: null, role: 'support' }))).toEqual(
      sorted(['acme:support', 'acme:twoRoles']),
    );
  });

  it('finds nobody for a permission no role grants, an unknown organization or an unknown role', async () => {
    expect(await members.withPermission('NoSuchPermission', { organizationId: null })).toEqual([]);
    expect(await members.withPermission('InquiriesRead', { organizationId: newId() })).toEqual([]);
    expect(await members.withPermission('InquiriesRead', { organizationId: acme.id, role: 'auditor' })).toEqual([]);
  });

  it('answers as membersWithPermission of @idt/identity/knex does', async () => {
    for (const scope of [{ organizationId: acme.id }, { organizationId: null }, { organizationId: acme.id, role: 'support' }]) {
      expect(await membersWithPermission(database.db, 'InquiriesRead', scope)).toEqual(
        await members.withPermission('InquiriesRead', scope),
      );
    }
  });
});
