import { newId } from '@idt/core';
import { boundedList, OrganizationAuditActions } from '../audit/organization-actions.js';
import { ScimError } from './errors.js';
import type { ScimGroupInput, ScimGroupRecord } from './groups.js';
import type { ScimResourceService, ScimResourceServiceOptions } from './resource-service.js';
import { reconcileRoles } from './roles.js';
import type { ScimTransaction } from './store.js';
import { createScimWrite, recordScimAudit } from './write.js';

/**
 * SCIM Groups of one organization; their members get the roles mapped to the group's name.
 * `list` and `get` read the members when `withMembers` says so.
 *
 * - `get` throws ScimError 404 for another organization's or no group.
 * - `create` throws ScimError 409 `uniqueness` for a taken displayName, 400
 *   `invalidValue` for a member who is no User of the organization.
 * - `replace` replaces name, externalId and members (PUT, or PATCH once
 *   applied). Records `identity.scim.groupUpdated` when the name or
 *   externalId changed and `identity.scim.groupMembersChanged` when members
 *   were added or removed.
 */
export interface ScimGroupsService extends ScimResourceService<ScimGroupRecord, ScimGroupInput, [withMembers: boolean]> {}

/** Dependencies of {@link createScimGroupsService}. */
export type ScimGroupsServiceOptions = ScimResourceServiceOptions;

const notFound = () => new ScimError(404, 'No such Group in this organization.');

/** The bytes each list of user ids may take in a record's metadata (about 150 ids; the counts are exact). */
const ID_LIST_BYTES = 6_000;

/**
 * The SCIM Groups service: each write locks the organization, changes the
 * group, and recomputes the roles of the members it touched, in one transaction.
 *
 * @example
 * const groups = createScimGroupsService({ store });
 * await groups.create(orgId, parseGroupInput(body));
 */
export function createScimGroupsService(options: ScimGroupsServiceOptions): ScimGroupsService {
  const { store } = options;

  async function get(organizationId: string, groupId: string, withMembers: boolean) {
    const record = await store.findGroup(organizationId, groupId.toLowerCase(), withMembers);
    if (!record) throw notFound();
    return record;
  }

  const write = createScimWrite(
    options,
    notFound,
    () => new ScimError(409, 'A Group with this displayName exists already.', 'uniqueness'),
  );

  async function assertMembers(tx: ScimTransaction, organizationId: string, userIds: readonly string[]) {
    const found = new Set(await tx.existingUsers(organizationId, userIds));
    const missing = userIds.filter((id) => !found.has(id));
    if (missing.length > 0) {
      throw new ScimError(400, `No User of this organization has the id ${missing.slice(0, 3).join(', ')}.`, 'invalidValue');
    }
  }

  return {
    list: (organizationId, filter, page, withMembers) => store.listGroups(organizationId, filter, page, withMembers),
    get,

    async create(organizationId, input, context) {
      const id = await write(organizationId, async (tx, effects, at) => {
        if (await tx.groupByName(organizationId, input.displayName.toLowerCase())) {
          throw new ScimError(409, 'A Group with this displayName exists already.', 'uniqueness');
        }
        await assertMembers(tx, organizationId, input.memberIds);
        const groupId = newId();
        await tx.insertGroup({ id: groupId, organizationId, displayName: input.displayName, externalId: input.externalId, at });
        await tx.setGroupMembers(groupId, input.memberIds, []);
        await reconcileRoles(tx, organizationId, input.memberIds, at, effects);
        await recordScimAudit(tx, context, {
          action: OrganizationAuditActions.scimGroupCreated.action,
          organizationId,
          target: { type: 'scimGroup', id: groupId, display: input.displayName },
          metadata: {
            externalId: input.externalId,
            memberUserIds: boundedList(input.memberIds, ID_LIST_BYTES),
            memberCount: input.memberIds.length,
            rolesChangedCount: effects.events.length,
          },
        });
        return groupId;
      });
      return get(organizationId, id, true);
    },

    async replace(organizationId, rawGroupId, input, context) {
      const groupId = rawGroupId.toLowerCase();
      // The name and externalId before, for the audit record (PATCH has just read the group too).
      const previous = await get(organizationId, groupId, false);
      await write(organizationId, async (tx, effects, at) => {
        const group = await tx.groupOf(organizationId, groupId);
        if (!group) throw notFound();
        const key = input.displayName.toLowerCase();
        const renamed = key !== group.displayNameKey;
        if (renamed && (await tx.groupByName(organizationId, key))) {
          throw new ScimError(409, 'A Group with this displayName exists already.', 'uniqueness');
        }
        const current = await tx.groupMemberIds(groupId);
        const before = new Set(current);
        const after = new Set(input.memberIds);
        const added = input.memberIds.filter((id) => !before.has(id));
        const removed = current.filter((id) => !after.has(id));
        await assertMembers(tx, organizationId, added);
        await tx.updateGroup(groupId, { displayName: input.displayName, externalId: input.externalId, at });
        await tx.setGroupMembers(groupId, added, removed);
        await reconcileRoles(tx, organizationId, renamed ? [...current, ...added] : [...added, ...removed], at, effects);
        const target = { type: 'scimGroup', id: groupId, display: input.displayName };
        const changed = [
          ...(input.displayName !== previous.displayName ? ['displayName'] : []),
          ...(input.externalId !== previous.externalId ? ['externalId'] : []),
        ];
        await recordScimAudit(
          tx,
          context,
          ...(changed.length > 0
            ? [
                {
                  action: OrganizationAuditActions.scimGroupUpdated.action,
                  organizationId,
                  target,
                  metadata: {
                    changed,
                    displayName: input.displayName,
                    previousDisplayName: previous.displayName,
                    externalId: input.externalId,
                    rolesChangedCount: renamed ? effects.events.length : 0,
                  },
                },
              ]
            : []),
          ...(added.length + removed.length > 0
            ? [
                {
                  action: OrganizationAuditActions.scimGroupMembersChanged.action,
                  organizationId,
                  target,
                  metadata: {
                    addedUserIds: boundedList(added, ID_LIST_BYTES),
                    addedCount: added.length,
                    removedUserIds: boundedList(removed, ID_LIST_BYTES),
                    removedCount: removed.length,
                    rolesChangedCount: renamed ? 0 : effects.events.length,
                  },
                },
              ]
            : []),
        );
      });
      return get(organizationId, groupId, true);
    },

    async remove(organizationId, rawGroupId, context) {
      const groupId = rawGroupId.toLowerCase();
      const before = await store.findGroup(organizationId, groupId, false);
      await write(organizationId, async (tx, effects, at) => {
        const group = await tx.groupOf(organizationId, groupId);
        if (!group) throw notFound();
        const members = await tx.groupMemberIds(groupId);
        await tx.deleteGroup(groupId);
        await reconcileRoles(tx, organizationId, members, at, effects);
        await recordScimAudit(tx, context, {
          action: OrganizationAuditActions.scimGroupDeleted.action,
          organizationId,
          target: { type: 'scimGroup', id: groupId, display: before?.displayName ?? group.displayNameKey },
          metadata: { memberCount: members.length, rolesChangedCount: effects.events.length },
        });
      });
    },
  };
}
