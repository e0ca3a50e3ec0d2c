import { type Clock, isUniqueViolation, newId, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import { CacheNamespaces, EVERY_KEY } from '../access/cache-namespaces.js';
import { type AccountsActor, authorizeInOrganization, requireUserId } from '../accounts/actor.js';
import { OrganizationCreatedEvent } from '../accounts/events.js';
import { EnrollmentPolicySchema, type OrganizationRecord, type UserOrganization } from '../accounts/records.js';
import {
  OrganizationAuditActions,
  type OrganizationAuditContext,
  organizationAuditEntry,
} from '../audit/organization-actions.js';
import { OrganizationNameSchema } from '../schemas.js';
import { slugify } from '../slug.js';
import type { NewOrganization, OrganizationsStore } from './store.js';

/** Attempts at creating an organization whose slug other transactions keep taking. */
const SLUG_ATTEMPTS = 5;

/** The body of `POST /v1/identity/organizations`. */
export const CreateOrganizationInput = z.object({
  name: OrganizationNameSchema,
  enrollmentPolicy: EnrollmentPolicySchema.optional().describe('`invitation_only` when absent.'),
});

/** Input of {@link OrganizationsService.create}. */
export type CreateOrganizationInput = z.input<typeof CreateOrganizationInput>;

/** The body of `PATCH /v1/identity/organizations/{orgId}`; the slug never changes. */
export const UpdateOrganizationInput = z.object({
  name: OrganizationNameSchema.optional(),
  enrollmentPolicy: EnrollmentPolicySchema.optional(),
});

/** Input of {@link OrganizationsService.update}. */
export type UpdateOrganizationInput = z.input<typeof UpdateOrganizationInput>;

/** Slugs leave room for a `-NNN` suffix within the 200-character column. */
const SLUG_BASE_LENGTH = 190;

/** Organizations: creation by any user, reading and updating by members with the permission. */
export interface OrganizationsService {
  /**
   * Creates an organization whose active owner is the caller, with a unique
   * slug derived from the name, and publishes `OrganizationCreatedEvent`.
   *
   * @throws ProblemError `Auth.Forbidden` for a service account; a zod error for bad input.
   */
  create(actor: AccountsActor, input: CreateOrganizationInput, context?: OrganizationAuditContext): Promise<OrganizationRecord>;
  /**
   * The caller's organization (`OrganizationsRead`).
   *
   * @throws ProblemError `Identity.OrganizationNotFound` (404) for any other organization.
   */
  get(actor: AccountsActor, organizationId: string): Promise<OrganizationRecord>;
  /**
   * Renames the caller's organization or changes its enrollment policy (`OrganizationsUpdate`).
   *
   * @throws ProblemError `Identity.OrganizationNotFound` (404) for any other organization.
   */
  update(
    actor: AccountsActor,
    organizationId: string,
    input: UpdateOrganizationInput,
    context?: OrganizationAuditContext,
  ): Promise<OrganizationRecord>;
  /** Every organization the caller has a membership in, whatever its state. */
  listMine(actor: AccountsActor): Promise<UserOrganization[]>;
}

/** Dependencies of {@link createOrganizationsService}. */
export interface OrganizationsServiceOptions {
  readonly organizations: OrganizationsStore;
  readonly clock?: Clock;
}

/**
 * The organizations service.
 *
 * @example
 * const organizations = createOrganizationsService({ organizations: createKnexOrganizationsStore(deps) });
 * const created = await organizations.create(principal, { name: 'Acme', enrollmentPolicy: 'approval_required' });
 */
export function createOrganizationsService(options: OrganizationsServiceOptions): OrganizationsService {
  const { organizations } = options;
  const clock = options.clock ?? systemClock;

  async function found(organizationId: string): Promise<OrganizationRecord> {
    const organization = await organizations.find(organizationId);
    if (!organization) throw new ProblemError('Identity.OrganizationNotFound');
    return organization;
  }

  /**
   * Inserts the organization with its owner, publishes
   * `OrganizationCreatedEvent` and records `identity.organization.created`
   * (on the new organization's trail), in one transaction; a slug taken
   * concurrently (unique violation) runs the transaction again with the next free slug.
   */
  async function insert(
    organization: NewOrganization,
    actor: AccountsActor,
    context: OrganizationAuditContext | undefined,
  ): Promise<OrganizationRecord> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await organizations.transaction(async (tx) => {
          const created = await tx.insert(organization);
          await tx.publish([
            {
              event: OrganizationCreatedEvent,
              payload: {
                organizationId: created.id,
                name: created.name,
                slug: created.slug,
                createdByUserId: organization.ownerUserId,
              },
            },
          ]);
          await tx.audit?.([
            organizationAuditEntry(
              {
                action: OrganizationAuditActions.organizationCreated.action,
                organizationId: created.id,
                target: { type: 'organization', id: created.id, display: created.name },
                metadata: { slug: created.slug, enrollmentPolicy: created.enrollmentPolicy },
              },
              context,
              actor,
            ),
          ]);
          return created;
        });
      } catch (error) {
        // Another transaction took the slug between our read and our insert: read again.
        if (!isUniqueViolation(error) || attempt >= SLUG_ATTEMPTS) throw error;
      }
    }
  }

  return {
    async create(actor, input, context) {
      const userId = requireUserId(actor);
      const parsed = CreateOrganizationInput.parse(input);
      const slug = slugify(parsed.name).slice(0, SLUG_BASE_LENGTH).replace(/-+$/, '') || 'organization';
      return insert(
        {
          id: newId(),
          name: parsed.name,
          slug,
          enrollmentPolicy: parsed.enrollmentPolicy ?? 'invitation_only',
          ownerUserId: userId,
          membershipId: newId(),
          createdAt: clock.now().toISOString(),
        },
        actor,
        context,
      );
    },

    async get(actor, organizationId) {
      authorizeInOrganization(actor, organizationId, 'OrganizationsRead');
      return found(organizationId.toLowerCase());
    },

    async update(actor, organizationId, input, context) {
      authorizeInOrganization(actor, organizationId, 'OrganizationsUpdate');
      const patch = UpdateOrganizationInput.parse(input);
      const id = organizationId.toLowerCase();
      if (patch.name !== undefined || patch.enrollmentPolicy !== undefined) {
        const at = clock.now().toISOString();
        // The values before, for the audit record (an update is rare; this read is not on a hot path).
        const before = await organizations.find(id);
        const updated = await organizations.transaction(async (tx) => {
          if (!before || !(await tx.update(id, patch, at))) return false;
          // Cached memberships carry the organization's name.
          await tx.evict([{ namespace: CacheNamespaces.memberships, key: EVERY_KEY }]);
          await tx.audit?.([
            organizationAuditEntry(
              {
                action: OrganizationAuditActions.organizationUpdated.action,
                organizationId: id,
                target: { type: 'organization', id, display: patch.name ?? before.name },
                metadata: {
                  changed: Object.keys(patch),
                  ...(patch.name !== undefined ? { name: patch.name, previousName: before.name } : {}),
                  ...(patch.enrollmentPolicy !== undefined
                    ? { enrollmentPolicy: patch.enrollmentPolicy, previousEnrollmentPolicy: before.enrollmentPolicy }
                    : {}),
                },
              },
              context,
              actor,
            ),
          ]);
          return true;
        });
        if (!updated) throw new ProblemError('Identity.OrganizationNotFound');
      }
      return found(id);
    },

    listMine: (actor) => organizations.listForUser(requireUserId(actor)),
  };
}
