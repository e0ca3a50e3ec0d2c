import { type Clock, newId, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import { type AccountsActor, authorizeInOrganization, requireUserId } from '../accounts/actor.js';
import { EnrollmentPolicySchema, type OrganizationRecord, type UserOrganization } from '../accounts/records.js';
import { OrganizationNameSchema } from '../schemas.js';
import { slugify } from '../slug.js';
import type { OrganizationsStore } from './store.js';

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
  create(actor: AccountsActor, input: CreateOrganizationInput): Promise<OrganizationRecord>;
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
  update(actor: AccountsActor, organizationId: string, input: UpdateOrganizationInput): Promise<OrganizationRecord>;
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

  return {
    async create(actor, input) {
      const userId = requireUserId(actor);
      const parsed = CreateOrganizationInput.parse(input);
      const slug = slugify(parsed.name).slice(0, SLUG_BASE_LENGTH).replace(/-+$/, '') || 'organization';
      return organizations.create({
        id: newId(),
        name: parsed.name,
        slug,
        enrollmentPolicy: parsed.enrollmentPolicy ?? 'invitation_only',
        ownerUserId: userId,
        membershipId: newId(),
        createdAt: clock.now().toISOString(),
      });
    },

    async get(actor, organizationId) {
      authorizeInOrganization(actor, organizationId, 'OrganizationsRead');
      return found(organizationId.toLowerCase());
    },

    async update(actor, organizationId, input) {
      authorizeInOrganization(actor, organizationId, 'OrganizationsUpdate');
      const patch = UpdateOrganizationInput.parse(input);
      const updated = await organizations.update(organizationId.toLowerCase(), patch, clock.now().toISOString());
      if (!updated) throw new ProblemError('Identity.OrganizationNotFound');
      return updated;
    },

    listMine: (actor) => organizations.listForUser(requireUserId(actor)),
  };
}
