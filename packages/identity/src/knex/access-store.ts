import { dialectOf, runStatement } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { AccessStore, MembershipAccess, RevocationSubject, UserAccess } from '../access/store.js';

/** The knex {@link AccessStore}: primary-key reads only. */
export function createKnexAccessStore(db: Knex): AccessStore {
  return {
    async findUser(userId) {
      const row = await db('identity_users').where({ id: userId }).first('id', 'status', 'email', 'first_name', 'last_name');
      if (!row) return undefined;
      return {
        id: row.id,
        status: row.status as UserAccess['status'],
        email: row.email,
        firstName: row.first_name,
        lastName: row.last_name,
      };
    },
    async findMembership(userId, organizationId) {
      const row = await db('identity_memberships as m')
        .join('identity_organizations as o', 'o.id', 'm.organization_id')
        .where({ 'm.user_id': userId, 'm.organization_id': organizationId })
        .first('m.id', 'm.status', 'o.id as organization_id', 'o.name', 'o.status as organization_status', 'o.is_platform');
      if (!row) return undefined;
      const [roles, custom] = await Promise.all([
        db('identity_membership_roles').where({ membership_id: row.id }).pluck('role'),
        db('identity_roles').where({ organization_id: organizationId }).select('name', 'permissions'),
      ]);
      return {
        organizationId: row.organization_id,
        organizationName: row.name,
        organizationStatus: row.organization_status as MembershipAccess['organizationStatus'],
        isPlatform: Boolean(row.is_platform),
        status: row.status as MembershipAccess['status'],
        roles: roles as string[],
        customRoles: new Map(
          custom.map((role: { name: string; permissions: string }) => [role.name, JSON.parse(role.permissions) as string[]]),
        ),
      };
    },
    async findRevocation(subject, id) {
      const row = await db('identity_token_revocations').where({ subject_type: subject, subject_id: id }).first('not_before');
      return row ? Number(row.not_before) : undefined;
    },
  };
}

/** Watermark meaning "every token of this subject", for ended sessions. */
export const REVOKE_ALL = 2_147_483_647;

/** The watermark upsert of {@link writeRevocation}: a later watermark never moves back. */
const revocationSql = (greatest: string) =>
  `insert into identity_token_revocations (subject_type, subject_id, not_before, created_at) values (?, ?, ?, ?)
on conflict (subject_type, subject_id) do update set
  not_before = ${greatest}(identity_token_revocations.not_before, excluded.not_before), created_at = excluded.created_at`;
const REVOCATION_SQL = { postgres: revocationSql('greatest'), sqlite: revocationSql('max') };

/**
 * Records a revocation watermark in the caller's transaction: tokens of the
 * subject issued at or before `at` (whole seconds, so tokens minted in the
 * same second are refused too) stop validating. An existing later watermark
 * is kept. Pair it with an invalidation of `identity.revocations`.
 */
export async function writeRevocation(
  trx: Knex.Transaction | Knex,
  subject: RevocationSubject,
  id: string,
  at: Date,
  options: { all?: boolean } = {},
): Promise<number> {
  const notBefore = options.all ? REVOKE_ALL : Math.floor(at.getTime() / 1000) + 1;
  const sql = dialectOf(trx as Knex) === 'postgres' ? REVOCATION_SQL.postgres : REVOCATION_SQL.sqlite;
  await runStatement(trx as Knex, sql, [subject, id, notBefore, at.toISOString()]);
  return notBefore;
}
