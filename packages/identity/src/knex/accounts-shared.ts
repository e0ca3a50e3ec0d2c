import type { AuditTrail, EventOutbox, PageRequest } from '@idt/core';
import { type CacheInvalidator, toIso } from '@idt/core/knex';
import { ProblemError } from '@idt/problem';
import type { Knex } from 'knex';
import type { MembershipStatus } from '../access/store.js';
import type { EnrollmentPolicy, MemberRecord, OrganizationRecord, UserRecord } from '../accounts/records.js';
import type { OrganizationContext } from '../memberships/store.js';

/** What the knex stores of users, organizations, memberships, invitations and roles are built on. */
export interface KnexAccountsStoreOptions {
  readonly db: Knex;
  /** Writes the events services publish in the store's transactions. */
  readonly outbox: EventOutbox;
  /** Evicts the cached access data services name, after the store's transactions commit. */
  readonly invalidator: Pick<CacheInvalidator, 'invalidate' | 'invalidateMany'>;
  /** Records the audit entries services write in the store's transactions (`ctx.audit`); without it, nothing is recorded. */
  readonly audit?: Pick<AuditTrail, 'record'>;
}

/** A connection or a transaction. */
export type Executor = Knex | Knex.Transaction;

type Row = Record<string, unknown>;

/** The user columns {@link userFromRow} reads, from `identity_users as u`. */
export const USER_COLUMNS = [
  'u.id',
  'u.email',
  'u.username',
  'u.first_name',
  'u.last_name',
  'u.status',
  'u.email_verified',
  'u.created_at',
] as const;

/** A user row as a record. */
export function userFromRow(row: Row): UserRecord {
  return {
    id: String(row.id),
    email: String(row.email),
    username: String(row.username),
    firstName: String(row.first_name),
    lastName: String(row.last_name),
    status: row.status as UserRecord['status'],
    emailVerified: Boolean(row.email_verified),
    createdAt: toIso(row.created_at),
  };
}

/** An organization row as a record. */
export function organizationFromRow(row: Row): OrganizationRecord {
  return {
    id: String(row.id),
    name: String(row.name),
    slug: String(row.slug),
    enrollmentPolicy: row.enrollment_policy as EnrollmentPolicy,
    status: row.status as OrganizationRecord['status'],
    isPlatform: Boolean(row.is_platform),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

/** The role names of memberships, sorted, by membership id. */
export async function rolesOf(db: Executor, membershipIds: readonly string[]): Promise<Map<string, string[]>> {
  const roles = new Map<string, string[]>(membershipIds.map((id) => [id, []]));
  if (membershipIds.length === 0) return roles;
  const rows: Array<{ membership_id: string; role: string }> = await db('identity_membership_roles')
    .whereIn('membership_id', [...membershipIds])
    .orderBy('role')
    .select('membership_id', 'role');
  for (const row of rows) roles.get(row.membership_id)?.push(row.role);
  return roles;
}

/** A count query's single number, on both engines. */
export async function countOf(query: Knex.QueryBuilder): Promise<number> {
  const row = (await query.count({ n: '*' }).first()) as { n?: unknown } | undefined;
  return Number(row?.n ?? 0);
}

/** Applies a page's limit and offset. */
export function paged(query: Knex.QueryBuilder, page: PageRequest): Knex.QueryBuilder {
  return query.limit(page.pageSize).offset((page.page - 1) * page.pageSize);
}

/**
 * Takes the organization's row lock for the rest of the transaction. It is
 * the first statement of every membership-changing transaction: on Postgres
 * the row lock serializes them per organization; on SQLite the write takes
 * the database's write lock before anything is read, so no transaction works
 * on a stale snapshot.
 *
 * @returns whether the organization exists.
 */
export async function lockOrganization(trx: Knex.Transaction, organizationId: string): Promise<boolean> {
  const updated = await trx('identity_organizations')
    .where({ id: organizationId })
    .update({ updated_at: trx.ref('updated_at') });
  return updated > 0;
}

/** The organization's custom roles: name to permissions. */
export async function customRolesOf(db: Executor, organizationId: string): Promise<Map<string, string[]>> {
  const rows: Array<{ name: string; permissions: string }> = await db('identity_roles')
    .where({ organization_id: organizationId })
    .select('name', 'permissions');
  return new Map(rows.map((row) => [row.name, JSON.parse(row.permissions) as string[]]));
}

/**
 * Locks the organization and reads what membership policy decides on.
 *
 * @throws ProblemError `Identity.OrganizationNotFound` when it does not exist.
 */
export async function organizationContext(
  trx: Knex.Transaction,
  organizationId: string,
  actorUserId: string | null,
): Promise<OrganizationContext> {
  if (!(await lockOrganization(trx, organizationId))) throw new ProblemError('Identity.OrganizationNotFound');
  const organization = organizationFromRow(await trx('identity_organizations').where({ id: organizationId }).first());
  // One after another: a transaction is one connection, which runs one query at a time.
  const customRoles = await customRolesOf(trx, organizationId);
  const owners = (await trx('identity_memberships as m')
    .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
    .join('identity_users as u', 'u.id', 'm.user_id')
    .where({ 'm.organization_id': organizationId, 'm.status': 'active', 'u.status': 'active', 'r.role': 'owner' })
    .pluck('m.user_id')) as string[];
  const actorRoles =
    actorUserId === null
      ? []
      : ((await trx('identity_memberships as m')
          .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
          .where({ 'm.organization_id': organizationId, 'm.user_id': actorUserId, 'm.status': 'active' })
          .pluck('r.role')) as string[]);
  return { organization, customRoles, activeOwnerIds: owners, actorRoles };
}

/** The member columns {@link memberFromRow} reads, from `identity_memberships as m` joined to `identity_users as u`. */
export const MEMBER_COLUMNS = [
  'm.id',
  'm.user_id',
  'u.email',
  'u.first_name',
  'u.last_name',
  'm.status',
  'm.created_at',
  'm.updated_at',
] as const;

/** A membership row (joined to its user) and its roles as a record. */
export function memberFromRow(row: Row, roles: readonly string[]): MemberRecord {
  return {
    userId: String(row.user_id),
    email: String(row.email),
    firstName: String(row.first_name),
    lastName: String(row.last_name),
    status: row.status as MembershipStatus,
    roles: [...roles],
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

/** One member of an organization, with the membership id. */
export async function findMember(
  db: Executor,
  organizationId: string,
  userId: string,
): Promise<{ membershipId: string; member: MemberRecord } | undefined> {
  const row = await db('identity_memberships as m')
    .join('identity_users as u', 'u.id', 'm.user_id')
    .where({ 'm.organization_id': organizationId, 'm.user_id': userId })
    .first(...MEMBER_COLUMNS);
  if (!row) return undefined;
  const roles = await rolesOf(db, [row.id]);
  return { membershipId: row.id, member: memberFromRow(row, roles.get(row.id) ?? []) };
}

/** Replaces a membership's roles. */
export async function replaceRoles(trx: Knex.Transaction, membershipId: string, roles: readonly string[]): Promise<void> {
  await trx('identity_membership_roles').where({ membership_id: membershipId }).delete();
  if (roles.length > 0) {
    await trx('identity_membership_roles').insert(roles.map((role) => ({ membership_id: membershipId, role })));
  }
}
