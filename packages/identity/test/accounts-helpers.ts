import type { Knex } from 'knex';

export type { CallOptions, World } from '@idt/testing';
export { caller, expectJson, expectProblem, outboxEvents, seedWorld } from '@idt/testing';

/** Every row of the tables an organization owns, to show that a refused request changed nothing. */
export async function organizationRows(db: Knex, organizationId: string) {
  const memberships = await db('identity_memberships').where({ organization_id: organizationId }).orderBy('id');
  return {
    organization: await db('identity_organizations').where({ id: organizationId }).first(),
    memberships,
    roles: await db('identity_membership_roles')
      .whereIn(
        'membership_id',
        memberships.map((row: { id: string }) => row.id),
      )
      .orderBy(['membership_id', 'role']),
    customRoles: await db('identity_roles').where({ organization_id: organizationId }).orderBy('id'),
    invitations: await db('identity_invitations').where({ organization_id: organizationId }).orderBy('id'),
  };
}

/** The role names of a user's membership. */
export async function rolesOf(db: Knex, userId: string, organizationId: string): Promise<string[]> {
  return db('identity_membership_roles as r')
    .join('identity_memberships as m', 'm.id', 'r.membership_id')
    .where({ 'm.user_id': userId, 'm.organization_id': organizationId })
    .orderBy('r.role')
    .pluck('r.role');
}
