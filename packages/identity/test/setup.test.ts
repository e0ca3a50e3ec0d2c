import { coreMigrations, createDatabase } from '@idt/core/knex';
import { ProblemError } from '@idt/problem';
import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createArgon2Hasher, createSetupService } from '../src/index.js';
import { createKnexSetupStore, identityMigrations } from '../src/knex.js';

const hasher = createArgon2Hasher();
const admin = {
  email: '  Ada@Example.COM ',
  password: 'correct horse battery staple',
  firstName: 'Ada',
  lastName: 'Lovelace',
  organizationName: 'Acme Platform',
};

describe.each(testDialects())('setup on %s', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations]);
  });
  afterAll(async () => {
    await database.destroy();
  });

  it('validates every field and writes nothing on bad input', async () => {
    const setup = createSetupService({ store: createKnexSetupStore(database.db), hasher });
    await expect(setup.completeSetup({ ...admin, email: 'nope', password: 'short' })).rejects.toMatchObject({
      issues: expect.arrayContaining([
        expect.objectContaining({ path: ['email'] }),
        expect.objectContaining({ path: ['password'] }),
      ]),
    });
    expect(await database.db('identity_users').count({ n: '*' }).first()).toMatchObject({ n: expect.anything() });
    expect(Number((await database.db('identity_users').count({ n: '*' }).first())?.n)).toBe(0);
    expect(await setup.isSetupRequired()).toBe(true);
  });

  it('lets exactly one of several concurrent bootstraps win, across two connection pools', async () => {
    const other = createDatabase(database.url);
    try {
      const services = [database.db, other, database.db, other].map((db) =>
        createSetupService({ store: createKnexSetupStore(db), hasher }),
      );
      const results = await Promise.allSettled(
        services.map((service, index) => service.completeSetup({ ...admin, email: `admin${index}@example.com` })),
      );
      const won = results.filter((result) => result.status === 'fulfilled');
      const lost = results.filter((result) => result.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(3);
      for (const result of lost) {
        expect((result as PromiseRejectedResult).reason).toBeInstanceOf(ProblemError);
        expect((result as PromiseRejectedResult).reason).toMatchObject({ code: 'Setup.AlreadyCompleted', status: 409 });
      }
      expect(Number((await database.db('identity_users').count({ n: '*' }).first())?.n)).toBe(1);
      expect(Number((await database.db('identity_organizations').count({ n: '*' }).first())?.n)).toBe(1);
      expect(Number((await database.db('identity_memberships').count({ n: '*' }).first())?.n)).toBe(1);
    } finally {
      await other.destroy();
    }
  });

  it('stored the user, platform organization and owner membership, with an argon2id hash', async () => {
    const user = await database.db('identity_users').first();
    expect(user.email).toMatch(/^admin\d@example\.com$/);
    expect(user.username).toBe(user.email);
    expect(user.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    const organization = await database.db('identity_organizations').first();
    expect(organization).toMatchObject({ name: 'Acme Platform', slug: 'acme-platform' });
    expect(Boolean(organization.is_platform)).toBe(true);
    const membership = await database.db('identity_memberships').first();
    expect(membership).toMatchObject({ user_id: user.id, organization_id: organization.id, status: 'active' });
    const roles = await database.db('identity_membership_roles').where({ membership_id: membership.id }).pluck('role');
    expect(roles).toEqual(['owner']);
    const setup = createSetupService({ store: createKnexSetupStore(database.db), hasher });
    expect(await setup.isSetupRequired()).toBe(false);
    await expect(setup.completeSetup(admin)).rejects.toMatchObject({ code: 'Setup.AlreadyCompleted' });
  });
});
