import { canonicalJson, newId } from '@idt/core';
import { CacheNamespaces } from '../access/cache-namespaces.js';
import { MembershipReinstatedEvent, MembershipSuspendedEvent, pendingEvent } from '../accounts/events.js';
import { MEMBER_ROLE } from '../accounts/role-policy.js';
import { OrganizationAuditActions } from '../audit/organization-actions.js';
import { membershipEviction } from '../memberships/enrollment.js';
import { sessionEvictions } from '../sessions/policy.js';
import { ScimError } from './errors.js';
import { ScimUserProvisionedEvent } from './events.js';
import type { ScimResourceService, ScimResourceServiceOptions } from './resource-service.js';
import { reconcileRoles, type ScimEffects } from './roles.js';
import type { ScimMembership, ScimTransaction } from './store.js';
import type { ScimUserAttributes, ScimUserInput, ScimUserRecord } from './users.js';
import { createScimWrite, recordScimAudit } from './write.js';

/**
 * SCIM Users of one organization: members, provisioned and deprovisioned by its directory.
 *
 * - `get` throws ScimError 404 when the user is not a SCIM User of the organization.
 * - `create` provisions a user: a new account without a password when the
 *   e-mail address is new, else a membership (or the SCIM link of an existing
 *   one) for the existing account. Never touches other organizations'
 *   memberships. Throws ScimError 409 `uniqueness` when the userName,
 *   externalId or account is provisioned already.
 * - `replace` replaces a user's attributes (PUT, or PATCH once applied);
 *   `active: false` deprovisions. Records `identity.scim.userDeactivated`
 *   when it did, else `identity.scim.userUpdated` when anything changed.
 * - `remove` (DELETE) suspends the membership and ends the user's access to
 *   the organization; the user answers 404 from then on.
 */
export interface ScimUsersService extends ScimResourceService<ScimUserRecord, ScimUserInput> {}

/** Dependencies of {@link createScimUsersService}. */
export type ScimUsersServiceOptions = ScimResourceServiceOptions;

const notFound = () => new ScimError(404, 'No such User in this organization.');

/** What {@link ScimUsersService} did to a membership's state, for the audit record. */
interface ActiveChange {
  readonly transition: 'deactivated' | 'reactivated' | null;
  readonly apiKeysRevoked: number;
  readonly sessionsEnded: number;
}

const UNCHANGED: ActiveChange = { transition: null, apiKeysRevoked: 0, sessionsEnded: 0 };

/** The attributes of a SCIM User that a replace changes (`active` aside). */
function changedAttributes(current: ScimUserRecord, input: ScimUserInput): string[] {
  const changed: string[] = [];
  if (input.userName !== current.userName) changed.push('userName');
  if (input.externalId !== current.externalId) changed.push('externalId');
  if (input.email !== current.email) changed.push('email');
  if (input.givenName !== current.givenName) changed.push('givenName');
  if (input.familyName !== current.familyName) changed.push('familyName');
  if (shownAttributes(input.attributes, input) !== shownAttributes(current.attributes, input)) changed.push('attributes');
  return changed;
}

/**
 * The attributes as a SCIM client sees them (canonical JSON), with the names
 * derived from `names` where none is stored: a PATCH applied to the rendered
 * User stores the derived `displayName`, which is no change.
 */
function shownAttributes(attributes: ScimUserAttributes, names: { givenName: string; familyName: string }): string {
  const formatted = attributes.formattedName ?? `${names.givenName} ${names.familyName}`.trim();
  const shown: Record<string, unknown> = { ...attributes };
  if (formatted) {
    shown.formattedName = formatted;
    shown.displayName = attributes.displayName ?? formatted;
  }
  return canonicalJson(shown);
}
const taken = (what: string) => new ScimError(409, `A User with this ${what} exists already.`, 'uniqueness');

/**
 * The SCIM Users service. Every write runs in one transaction that first
 * locks the organization, as membership changes do.
 *
 * @example
 * const users = createScimUsersService({ store });
 * await users.create(orgId, parseUserInput(body));
 */
export function createScimUsersService(options: ScimUsersServiceOptions): ScimUsersService {
  const { store } = options;

  async function get(organizationId: string, userId: string): Promise<ScimUserRecord> {
    const record = await store.findUser(organizationId, userId.toLowerCase());
    if (!record) throw notFound();
    return record;
  }

  const write = createScimWrite(options, notFound, () => taken('userName, externalId or e-mail address'));

  /**
   * Moves the membership to the requested state. Deactivation suspends it,
   * revokes the user's API keys of the organization, and, when the user is
   * active in no other organization, ends every session and token of the
   * user; access tokens and sessions used in this organization stop at once
   * either way, since each request checks the (evicted) membership.
   */
  async function applyActive(
    tx: ScimTransaction,
    organizationId: string,
    userId: string,
    membership: ScimMembership,
    active: boolean,
    effects: ScimEffects,
    at: string,
  ): Promise<ActiveChange> {
    const payload = { organizationId, userId, changedByUserId: null };
    if (active) {
      if (membership.status === 'active') return UNCHANGED;
      await tx.updateMembership(membership.id, {
        status: 'active',
        ...(membership.roles.length === 0 ? { roles: [MEMBER_ROLE] } : {}),
        at,
      });
      effects.events.push(pendingEvent(MembershipReinstatedEvent, payload));
      effects.evictions.push(membershipEviction(userId, organizationId));
      return { ...UNCHANGED, transition: 'reactivated' };
    }
    if (membership.status !== 'active') return UNCHANGED;
    const lock = await tx.lockOrganization(organizationId);
    if (lock?.activeOwnerIds.includes(userId) && lock.activeOwnerIds.length <= 1) {
      throw new ScimError(
        400,
        'This is the last active owner of the organization; make another member owner first.',
        'mutability',
      );
    }
    await tx.updateMembership(membership.id, { status: 'suspended', at });
    effects.events.push(pendingEvent(MembershipSuspendedEvent, payload));
    effects.evictions.push(membershipEviction(userId, organizationId));
    const keys = await tx.revokeApiKeys(userId, organizationId, at);
    for (const key of keys) effects.evictions.push({ namespace: CacheNamespaces.apiKeys, key });
    const elsewhere = await tx.countOtherMemberships(userId, organizationId);
    let sessionsEnded = 0;
    if (elsewhere.active === 0) {
      const sessions = await tx.endUserSessionsAndTokens(userId, at);
      sessionsEnded = sessions.length;
      effects.evictions.push(
        { namespace: CacheNamespaces.users, key: userId },
        { namespace: CacheNamespaces.revocations, key: `user:${userId}` },
        ...sessions.flatMap(sessionEvictions),
      );
    }
    return { transition: 'deactivated', apiKeysRevoked: keys.length, sessionsEnded };
  }

  /** The membership and SCIM link of the User a write is about; 404 when it is no (longer a) SCIM User of the organization. */
  async function scimUserOf(tx: ScimTransaction, organizationId: string, userId: string) {
    const membership = await tx.membershipOf(organizationId, userId);
    const link = await tx.linkOf(organizationId, userId);
    if (!membership || link?.deleted) throw notFound();
    return { membership, link };
  }

  /** Refuses a userName or externalId that another live SCIM User of the organization has. */
  async function assertUnique(tx: ScimTransaction, organizationId: string, userId: string | undefined, input: ScimUserInput) {
    const byName = await tx.findLink(organizationId, { userNameKey: input.userName.toLowerCase() });
    if (byName && !byName.deleted && byName.userId !== userId) throw taken('userName');
    if (input.externalId !== null) {
      const byExternal = await tx.findLink(organizationId, { externalId: input.externalId });
      if (byExternal && !byExternal.deleted && byExternal.userId !== userId) throw taken('externalId');
    }
  }

  return {
    list: (organizationId, filter, page) => store.listUsers(organizationId, filter, page),
    get,

    async create(organizationId, input, context) {
      const userId = await write(organizationId, async (tx, effects, at) => {
        await assertUnique(tx, organizationId, undefined, input);
        const account = await tx.findAccountByEmail(input.email);
        let id: string;
        let owned: boolean;
        if (account) {
          id = account.id;
          const link = await tx.linkOf(organizationId, id);
          if (link && !link.deleted) throw taken('e-mail address');
          owned = link?.owned ?? false;
        } else {
          id = newId();
          owned = true;
          await tx.insertAccount({ id, email: input.email, firstName: input.givenName, lastName: input.familyName, at });
        }
        const membership = await tx.membershipOf(organizationId, id);
        let change = UNCHANGED;
        if (!membership) {
          await tx.insertMembership({
            id: newId(),
            organizationId,
            userId: id,
            status: input.active ? 'active' : 'suspended',
            roles: [MEMBER_ROLE],
            at,
          });
          effects.events.push(pendingEvent(ScimUserProvisionedEvent, { organizationId, userId: id, accountCreated: !account }));
          effects.evictions.push(membershipEviction(id, organizationId));
        } else {
          change = await applyActive(tx, organizationId, id, membership, input.active, effects, at);
        }
        await tx.writeLink({ organizationId, userId: id, ...linkValues(input), owned, at });
        await reconcileRoles(tx, organizationId, [id], at, effects);
        await recordScimAudit(tx, context, {
          action: OrganizationAuditActions.scimUserProvisioned.action,
          organizationId,
          target: { type: 'user', id, display: input.userName },
          metadata: {
            accountCreated: !account,
            membershipCreated: !membership,
            active: input.active,
            externalId: input.externalId,
            ...(change.transition === 'deactivated'
              ? { revokedApiKeyCount: change.apiKeysRevoked, sessionsEnded: change.sessionsEnded }
              : {}),
          },
        });
        return id;
      });
      return get(organizationId, userId);
    },

    async replace(organizationId, rawUserId, input, context) {
      const userId = rawUserId.toLowerCase();
      const current = await get(organizationId, userId);
      await write(organizationId, async (tx, effects, at) => {
        const { membership, link } = await scimUserOf(tx, organizationId, userId);
        await assertUnique(tx, organizationId, userId, input);
        const elsewhere = await tx.countOtherMemberships(userId, organizationId);
        // The account (address, names) is this organization's to change only when its SCIM created it and it belongs nowhere else.
        const owned = (link?.owned ?? false) && elsewhere.any === 0;
        if (input.email !== current.email) {
          if (!owned) {
            throw new ScimError(
              400,
              "The e-mail address belongs to the user's account, which this organization did not create or shares with others.",
              'mutability',
            );
          }
          if (await tx.findAccountByEmail(input.email)) throw taken('e-mail address');
        }
        if (owned) {
          await tx.updateAccount(userId, { email: input.email, firstName: input.givenName, lastName: input.familyName, at });
          effects.evictions.push({ namespace: CacheNamespaces.users, key: userId });
        }
        const change = await applyActive(tx, organizationId, userId, membership, input.active, effects, at);
        await tx.writeLink({ organizationId, userId, ...linkValues(input), owned: link?.owned ?? false, at });
        const changed = changedAttributes(current, input);
        const target = { type: 'user', id: userId, display: input.userName };
        if (change.transition === 'deactivated') {
          await recordScimAudit(tx, context, {
            action: OrganizationAuditActions.scimUserDeactivated.action,
            organizationId,
            target,
            metadata: { changed, revokedApiKeyCount: change.apiKeysRevoked, sessionsEnded: change.sessionsEnded },
          });
        } else if (change.transition === 'reactivated' || changed.length > 0) {
          // A PUT that changes nothing (directories resend users) is no change to record.
          await recordScimAudit(tx, context, {
            action: OrganizationAuditActions.scimUserUpdated.action,
            organizationId,
            target,
            metadata: { changed, reactivated: change.transition === 'reactivated' },
          });
        }
      });
      return get(organizationId, userId);
    },

    async remove(organizationId, rawUserId, context) {
      const userId = rawUserId.toLowerCase();
      const current = await get(organizationId, userId);
      await write(organizationId, async (tx, effects, at) => {
        const { membership, link } = await scimUserOf(tx, organizationId, userId);
        const change = await applyActive(tx, organizationId, userId, membership, false, effects, at);
        if (!link) {
          await tx.writeLink({
            organizationId,
            userId,
            userName: current.userName,
            externalId: current.externalId,
            givenName: current.givenName,
            familyName: current.familyName,
            attributes: current.attributes,
            owned: false,
            at,
          });
        }
        await tx.deleteLink(organizationId, userId, at);
        await reconcileRoles(tx, organizationId, [userId], at, effects);
        await recordScimAudit(tx, context, {
          action: OrganizationAuditActions.scimUserDeleted.action,
          organizationId,
          target: { type: 'user', id: userId, display: current.userName },
          metadata: {
            wasActive: change.transition === 'deactivated',
            revokedApiKeyCount: change.apiKeysRevoked,
            sessionsEnded: change.sessionsEnded,
          },
        });
      });
    },
  };
}

function linkValues(input: ScimUserInput) {
  return {
    userName: input.userName,
    externalId: input.externalId,
    givenName: input.givenName,
    familyName: input.familyName,
    attributes: input.attributes,
  };
}
