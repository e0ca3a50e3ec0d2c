import { knexUnitOfWork, selectRows } from '@idt/core/knex';
import { ProblemError } from '@idt/problem';
import type { Knex } from 'knex';
import type { MembershipStatus } from '../access/store.js';
import type { MembershipsStore, MembershipsWrites } from '../memberships/store.js';
import {
  countOf,
  findMember,
  type KnexAccountsStoreOptions,
  lockOrganization,
  MEMBER_COLUMNS,
  memberFromRow,
  organizationContext,
  organizationFromRow,
  paged,
  replaceRoles,
  rolesOf,
} from './accounts-shared.js';

/** A user's membership status in an organization (read at every sign-in to an organization's client), written once. */
const MEMBERSHIP_STATUS_SQL = 'select status from identity_memberships where user_id = ? and organization_id = ? limit 1';

/** The {@link MembershipsWrites} primitives over one transaction. */
function membershipsWrites(trx: Knex.Transaction): MembershipsWrites {
  return {
    async change(request, decide) {
      const context = await organizationContext(trx, request.organizationId, request.actorUserId);
      const current = await findMember(trx, request.organizationId, request.userId);
      const decision = decide({ ...context, member: current?.member });
      if (!current) throw new ProblemError('Identity.MemberNotFound');
      const { membershipId } = current;
      if (decision.kind === 'remove') {
        await trx('identity_memberships').where({ id: membershipId }).delete();
        return { decision, member: undefined };
      }
      await trx('identity_memberships')
        .where({ id: membershipId })
        .update({
          status: decision.status,
          updated_at: request.at,
          ...(decision.decided ? { decided_by_user_id: request.actorUserId, decided_at: request.at } : {}),
        });
      await replaceRoles(trx, membershipId, decision.roles);
      return { decision, member: (await findMember(trx, request.organizationId, request.userId))?.member };
    },

    async enroll(request, decide) {
      if (!(await lockOrganization(trx, request.organizationId))) throw new ProblemError('Identity.OrganizationNotFound');
      const existing = await trx('identity_memberships')
        .where({ user_id: request.userId, organization_id: request.organizationId })
        .first('status');
      if (existing) return { status: existing.status as MembershipStatus };
      const organization = organizationFromRow(await trx('identity_organizations').where({ id: request.organizationId }).first());
      const decision = decide(organization);
      if (!decision) return { status: undefined };
      await trx('identity_memberships').insert({
        id: request.membershipId,
        organization_id: request.organizationId,
        user_id: request.userId,
        status: decision.status,
        requested_at: decision.status === 'pending' ? request.at : null,
        created_at: request.at,
        updated_at: request.at,
      });
      await replaceRoles(trx, request.membershipId, decision.roles);
      return { status: decision.status, inserted: decision };
    },
  };
}

/**
 * The knex {@link MembershipsStore}. Every change locks the organization row
 * first, so the last-owner rule and enrollment hold under concurrency.
 *
 * @example
 * const memberships = createKnexMembershipsStore({ db, outbox: bus, invalidator });
 */
export function createKnexMembershipsStore(options: KnexAccountsStoreOptions): MembershipsStore {
  const { db } = options;

  const statusOf = async (userId: string, organizationId: string) => {
    const [row] = await selectRows(db, MEMBERSHIP_STATUS_SQL, [userId, organizationId]);
    return row ? (row[0] as MembershipStatus) : undefined;
  };

  return {
    ...knexUnitOfWork(options, membershipsWrites),

    async list(organizationId, request) {
      const base = () => {
        const query = db('identity_memberships as m')
          .join('identity_users as u', 'u.id', 'm.user_id')
          .where('m.organization_id', organizationId);
        if (request.status) query.andWhere('m.status', request.status);
        return query;
      };
      const [totalCount, rows] = await Promise.all([
        countOf(base()),
        paged(base().orderBy([{ column: 'm.created_at' }, { column: 'm.id' }]), request).select(...MEMBER_COLUMNS) as Promise<
          Array<Record<string, unknown>>
        >,
      ]);
      const roles = await rolesOf(
        db,
        rows.map((row) => String(row.id)),
      );
      return { totalCount, items: rows.map((row) => memberFromRow(row, roles.get(String(row.id)) ?? [])) };
    },

    async find(organizationId, userId) {
      return (await findMember(db, organizationId, userId))?.member;
    },

    statusOf,
  };
}
