import { newId } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { seedMembership, seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import type { InvitationSnapshot, InvitationsStore, StoredInvitation } from '../../src/invitations/store.js';
import { createKnexInvitationsStore } from '../../src/knex.js';
import { describeStoreContract, itRunsOneUnitOfWork } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';
const LATER = '2030-01-08T00:00:00.000Z';

function codeOf(error: unknown): string | undefined {
  return error instanceof ProblemError ? error.code : undefined;
}

describeStoreContract('invitations', (world) => {
  let store: InvitationsStore;
  const invitations = () => {
    store ??= createKnexInvitationsStore(world().options);
    return store;
  };
  const invitation = (organizationId: string, email: string, createdAt = AT): StoredInvitation => ({
    id: newId(),
    organizationId,
    email,
    roles: ['user'],
    status: 'pending',
    expiresAt: LATER,
    createdAt,
    invitedByUserId: null,
  });
  const create = (organizationId: string, email: string, createdAt = AT) =>
    invitations().transaction((tx) =>
      tx.create({ organizationId, email, actorUserId: null, at: createdAt }, () => ({
        invitation: invitation(organizationId, email, createdAt),
      })),
    );
  const accept = (invitationId: string, organizationId: string, userId: string, at = AT) =>
    invitations().transaction((tx) =>
      tx.accept({ invitationId, organizationId, userId, membershipId: newId(), at }, (snapshot) => ({
        roles: snapshot.invitation.roles,
      })),
    );

  itRunsOneUnitOfWork(world, invitations, {
    prepare: () => seedOrganization(world().db),
    write: (tx, probe, organization) =>
      tx.create({ organizationId: organization.id, email: `${probe}@example.com`, actorUserId: null, at: AT }, () => ({
        invitation: invitation(organization.id, `${probe}@example.com`),
      })),
    written: async (probe) =>
      (await world()
        .db('identity_invitations')
        .where({ email: `${probe}@example.com` })
        .first('id')) !== undefined,
  });

  describe('create', () => {
    it("shows decide the invitee's membership and pending invitations, and writes nothing when decide refuses", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const member = await seedUser(db);
      await seedMembership(db, { userId: member.id, organizationId: organization.id, status: 'suspended' });
      await create(organization.id, 'pending@example.com');
      const seen: InvitationSnapshot[] = [];
      const look = (email: string) =>
        invitations().transaction((tx) =>
          tx.create({ organizationId: organization.id, email, actorUserId: null, at: AT }, (snapshot) => {
            seen.push(snapshot);
            throw new ProblemError('Identity.InvitationExists');
          }),
        );
      await expect(look(member.email)).rejects.toSatisfy((error) => codeOf(error) === 'Identity.InvitationExists');
      await expect(look('pending@example.com')).rejects.toSatisfy((error) => codeOf(error) === 'Identity.InvitationExists');
      expect(seen.map((snapshot) => [snapshot.memberStatus, snapshot.hasPendingInvitation])).toEqual([
        ['suspended', false],
        [undefined, true],
      ]);
      expect(
        Number((await db('identity_invitations').where({ organization_id: organization.id }).count({ n: '*' }).first())?.n),
      ).toBe(1);
    });

    it('refuses an unknown organization', async () => {
      await expect(create(newId(), 'nobody@example.com')).rejects.toSatisfy(
        (error) => codeOf(error) === 'Identity.OrganizationNotFound',
      );
    });
  });

  describe('revoke', () => {
    it('revokes a pending invitation once, and answers what it found otherwise, within the organization only', async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const { invitation: pending } = await create(organization.id, 'revoke@example.com');
      const revoke = (organizationId: string, id: string) => invitations().transaction((tx) => tx.revoke(organizationId, id, AT));
      expect(await revoke(other.id, pending.id)).toBe('not-found');
      const outcomes = await Promise.all(Array.from({ length: 3 }, () => revoke(organization.id, pending.id)));
      expect(outcomes.sort()).toEqual(['already-revoked', 'already-revoked', 'revoked']);
      expect(await revoke(organization.id, newId())).toBe('not-found');

      const user = await seedUser(db, { email: 'accepted@example.com' });
      const { invitation: accepted } = await create(organization.id, user.email);
      await accept(accepted.id, organization.id, user.id);
      expect(await revoke(organization.id, accepted.id)).toBe('accepted');
    });
  });

  describe('accept', () => {
    it('lets exactly one of several concurrent acceptances consume the invitation, making the user an active member', async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const user = await seedUser(db, { email: `invitee-${newId().slice(-8)}@example.com` });
      const { invitation: sent } = await create(organization.id, user.email);
      const results = await Promise.allSettled(Array.from({ length: 4 }, () => accept(sent.id, organization.id, user.id)));
      const won = results.filter((result) => result.status === 'fulfilled');
      expect(won).toHaveLength(1);
      expect(
        results
          .filter((result) => result.status === 'rejected')
          .map((result) => codeOf((result as PromiseRejectedResult).reason)),
      ).toEqual(['Identity.InvitationInvalid', 'Identity.InvitationInvalid', 'Identity.InvitationInvalid']);
      const [winner] = won as Array<PromiseFulfilledResult<Awaited<ReturnType<typeof accept>>>>;
      expect(winner?.value.decision).toEqual({ roles: ['user'] });
      expect(winner?.value.joined).toMatchObject({
        organization: { id: organization.id },
        membership: { status: 'active', roles: ['user'] },
      });
      expect(await invitations().findById(sent.id)).toMatchObject({ status: 'accepted' });
    });

    it('writes nothing when decide refuses, and refuses an invitation of another organization', async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const user = await seedUser(db);
      const { invitation: sent } = await create(organization.id, user.email);
      await expect(
        invitations().transaction((tx) =>
          tx.accept(
            { invitationId: sent.id, organizationId: organization.id, userId: user.id, membershipId: newId(), at: AT },
            () => {
              throw new ProblemError('Identity.InvitationExpired');
            },
          ),
        ),
      ).rejects.toSatisfy((error) => codeOf(error) === 'Identity.InvitationExpired');
      expect(await invitations().findById(sent.id)).toMatchObject({ status: 'pending' });
      await expect(accept(sent.id, other.id, user.id)).rejects.toSatisfy(
        (error) => codeOf(error) === 'Identity.InvitationInvalid',
      );
      expect(await invitations().findById(sent.id)).toMatchObject({ status: 'pending' });
    });
  });

  describe('reads', () => {
    it("lists an organization's invitations newest first, and finds one only in its organization", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const { invitation: older } = await create(organization.id, 'older@example.com', '2030-01-01T00:00:00.000Z');
      const { invitation: newer } = await create(organization.id, 'newer@example.com', '2030-01-01T00:00:01.000Z');
      await create(other.id, 'elsewhere@example.com');
      const page = await invitations().list(organization.id, { page: 1, pageSize: 10 });
      expect(page.totalCount).toBe(2);
      expect(page.items.map((item) => item.id)).toEqual([newer.id, older.id]);
      expect(await invitations().find(organization.id, older.id)).toEqual(older);
      expect(await invitations().find(other.id, older.id)).toBeUndefined();
      expect(await invitations().findById(older.id)).toEqual(older);
    });
  });
});
