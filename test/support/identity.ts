import { newId } from '@idt/core';
import type { Knex } from 'knex';

/**
 * Direct inserts of users, organizations and memberships, for suites that
 * need accounts in place without going through the API under test. Passwords
 * are not set (sign-in suites register through the API instead).
 */
export interface SeededUser {
  readonly id: string;
  readonly email: string;
}

/** Inserts an active user. */
export async function seedUser(
  db: Knex,
  input: { email?: string; firstName?: string; lastName?: string; status?: 'active' | 'deactivated'; passwordHash?: string } = {},
): Promise<SeededUser> {
  const id = newId();
  const email = input.email ?? `user-${id.slice(-12)}@example.com`;
  const now = new Date().toISOString();
  await db('identity_users').insert({
    id,
    email,
    username: email,
    first_name: input.firstName ?? 'Test',
    last_name: input.lastName ?? 'User',
    password_hash: input.passwordHash ?? null,
    status: input.status ?? 'active',
    email_verified: false,
    created_at: now,
    updated_at: now,
  });
  return { id, email };
}

/** Inserts an organization. */
export async function seedOrganization(
  db: Knex,
  input: {
    name?: string;
    enrollmentPolicy?: 'open' | 'approval_required' | 'invitation_only';
    isPlatform?: boolean;
    status?: 'active' | 'suspended';
  } = {},
): Promise<{ id: string; name: string; slug: string }> {
  const id = newId();
  const name = input.name ?? `Org ${id.slice(-8)}`;
  const slug = `${name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')}-${id.slice(-6)}`;
  const now = new Date().toISOString();
  await db('identity_organizations').insert({
    id,
    name,
    slug,
    enrollment_policy: input.enrollmentPolicy ?? 'invitation_only',
    status: input.status ?? 'active',
    is_platform: input.isPlatform ?? false,
    created_at: now,
    updated_at: now,
  });
  return { id, name, slug };
}

/** Inserts a membership with roles (default: active `user`). */
export async function seedMembership(
  db: Knex,
  input: { userId: string; organizationId: string; roles?: string[]; status?: 'active' | 'pending' | 'suspended' | 'denied' },
): Promise<{ id: string }> {
  const id = newId();
  const now = new Date().toISOString();
  await db('identity_memberships').insert({
    id,
    organization_id: input.organizationId,
    user_id: input.userId,
    status: input.status ?? 'active',
    created_at: now,
    updated_at: now,
  });
  const roles = input.roles ?? ['user'];
  if (roles.length > 0) await db('identity_membership_roles').insert(roles.map((role) => ({ membership_id: id, role })));
  return { id };
}

/**
 * A typical tenant for isolation tests: an organization with an owner, an
 * admin, a manager and a plain user.
 */
export async function seedTenant(db: Knex, name?: string) {
  const organization = await seedOrganization(db, name ? { name } : {});
  const people: Record<'owner' | 'admin' | 'manager' | 'user', SeededUser> = {
    owner: await seedUser(db, { firstName: 'Olive', lastName: 'Owner' }),
    admin: await seedUser(db, { firstName: 'Adam', lastName: 'Admin' }),
    manager: await seedUser(db, { firstName: 'Mona', lastName: 'Manager' }),
    user: await seedUser(db, { firstName: 'Uma', lastName: 'User' }),
  };
  for (const role of ['owner', 'admin', 'manager', 'user'] as const) {
    await seedMembership(db, { userId: people[role].id, organizationId: organization.id, roles: [role] });
  }
  return { organization, ...people };
}

/** `Authorization: Bearer` headers, with JSON content type. */
export function bearer(token: string, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...extra };
}
