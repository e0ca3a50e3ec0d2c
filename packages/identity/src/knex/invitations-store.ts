import { knexUnitOfWork, toIso } from '@idt/core/knex';
import { ProblemError } from '@idt/problem';
import type { Knex } from 'knex';
import type { MembershipStatus } from '../access/store.js';
import type { InvitationsStore, InvitationsWrites, StoredInvitation } from '../invitations/store.js';
import {
  countOf,
  type Executor,
  findMember,
  type KnexAccountsStoreOptions,
  organizationContext,
  paged,
  replaceRoles,
} from './accounts-shared.js';

type Row = Record<string, unknown>;

function invitationFromRow(row: Row): StoredInvitation {
  return {
    id: String(row.id),
    organizationId: String(row.organization_id),
    email: String(row.email),
    roles: JSON.parse(String(row.roles)) as string[],
    status: row.status as StoredInvitation['status'],
    expiresAt: toIso(row.expires_at),
    createdAt: toIso(row.created_at),
    invitedByUserId: row.invited_by_user_id === null ? null : String(row.invited_by_user_id),
  };
}

async function findById(db: Executor, invitationId: string): Promise<StoredInvitation | undefined> {
  const row = await db('identity_invitations').where({ id: invitationId }).first();
  return row ? invitationFromRow(row) : undefined;
}

/** The {@link InvitationsWrites} primitives over one transaction. */
function invitationsWrites(trx: Knex.Transaction): InvitationsWrites {
  return {
    async create(request, decide) {
      const context = await organizationContext(trx, request.organizationId, request.actorUserId);
      // One after another: a transaction is one connection, which runs one query at a time.
      const member = await trx('identity_memberships as m')
        .join('identity_users as u', 'u.id', 'm.user_id')
        .where({ 'm.organization_id': request.organizationId, 'u.email': request.email })
        .first('m.status');
      const pending = await trx('identity_invitations')
        .where({ organization_id: request.organizationId, email: request.email, status: 'pending' })
        .andWhere('expires_at', '>', request.at)
        .first('id');
      const decision = decide({
        ...context,
        memberStatus: member ? (member.status as MembershipStatus) : undefined,
        hasPendingInvitation: pending !== undefined,
      });
      const { invitation } = decision;
      await trx('identity_invitations').insert({
        id: invitation.id,
        organization_id: invitation.organizationId,
        email: invitation.email,
        roles: JSON.stringify(invitation.roles),
        status: invitation.status,
        invited_by_user_id: invitation.invitedByUserId,
        expires_at: invitation.expiresAt,
        created_at: invitation.createdAt,
        updated_at: invitation.createdAt,
      });
      return decision;
    },

    async revoke(organizationId, invitationId, at) {
      const revoked = await trx('identity_invitations')
        .where({ id: invitationId, organization_id: organizationId, status: 'pending' })
        .update({ status: 'revoked', updated_at: at });
      if (revoked > 0) return 'revoked';
      const row = await trx('identity_invitations').where({ id: invitationId, organization_id: organizationId }).first('status');
      if (!row) return 'not-found';
      return row.status === 'accepted' ? 'accepted' : 'already-revoked';
    },

    async accept(request, decide) {
      const { organizationId } = request;
      const context = await organizationContext(trx, organizationId, request.userId);
      const invitation = await findById(trx, request.invitationId);
      const user = await trx('identity_users').where({ id: request.userId }).first('email');
      if (invitation?.organizationId !== organizationId || !user) throw new ProblemError('Identity.InvitationInvalid');
      const current = await findMember(trx, organizationId, request.userId);
      const decision = decide({ ...context, invitation, userEmail: String(user.email), member: current?.member });
      const consumed = await trx('identity_invitations')
        .where({ id: invitation.id, status: 'pending' })
        .update({ status: 'accepted', accepted_by_user_id: request.userId, accepted_at: request.at, updated_at: request.at });
      if (consumed === 0) throw new ProblemError('Identity.InvitationInvalid');
      let membershipId: string;
      if (current) {
        membershipId = current.membershipId;
        await trx('identity_memberships').where({ id: membershipId }).update({ status: 'active', updated_at: request.at });
      } else {
        membershipId = request.membershipId;
        await trx('identity_memberships').insert({
          id: membershipId,
          organization_id: organizationId,
          user_id: request.userId,
          status: 'active',
          created_at: request.at,
          updated_at: request.at,
        });
      }
      await replaceRoles(trx, membershipId, decision.roles);
      const { createdAt: _created, updatedAt: _updated, ...organization } = context.organization;
      const member = (await findMember(trx, organizationId, request.userId))?.member;
      return {
        decision,
        joined: {
          organization,
          membership: {
            status: 'active' as const,
            roles: member?.roles ?? [...decision.roles],
            createdAt: member?.createdAt ?? request.at,
          },
        },
      };
    },
  };
}

/**
 * The knex {@link InvitationsStore}. Creation and acceptance lock the
 * organization row first, like every membership change.
 *
 * @example
 * const invitations = createKnexInvitationsStore({ db, outbox: bus, invalidator });
 */
export function createKnexInvitationsStore(options: KnexAccountsStoreOptions): InvitationsStore {
  const { db } = options;

  return {
    ...knexUnitOfWork(options, invitationsWrites),

    async list(organizationId, page) {
      const base = () => db('identity_invitations').where({ organization_id: organizationId });
      const [totalCount, rows] = await Promise.all([
        countOf(base()),
        paged(
          base().orderBy([
            { column: 'created_at', order: 'desc' },
            { column: 'id', order: 'desc' },
          ]),
          page,
        ).select('*'),
      ]);
      return { totalCount, items: rows.map(invitationFromRow) };
    },

    async find(organizationId, invitationId) {
      const row = await db('identity_invitations').where({ id: invitationId, organization_id: organizationId }).first();
      return row ? invitationFromRow(row) : undefined;
    },

    findById: (invitationId) => findById(db, invitationId),
  };
}
