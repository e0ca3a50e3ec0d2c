import { z } from 'zod';

const timestamp = z.iso.datetime().describe('ISO 8601 UTC');

/** `active` or `deactivated` (by a platform administrator). */
export const UserStatusSchema = z.enum(['active', 'deactivated']);

/** A user's account, as the profile and the tenant's user list show it. */
export const UserRecord = z.object({
  id: z.uuid(),
  email: z.string(),
  username: z.string(),
  firstName: z.string(),
  lastName: z.string(),
  status: UserStatusSchema,
  emailVerified: z.boolean(),
  createdAt: timestamp,
});

/** A user's account, as the profile and the tenant's user list show it. */
export type UserRecord = z.output<typeof UserRecord>;

/**
 * How users who are not members join an organization when they sign in to
 * one of its clients: `open` (they become active members), `approval_required`
 * (their request waits for approval) or `invitation_only` (they cannot).
 */
export const EnrollmentPolicySchema = z.enum(['open', 'approval_required', 'invitation_only']);

/** An enrollment policy. */
export type EnrollmentPolicy = z.output<typeof EnrollmentPolicySchema>;

/** `active` or `suspended` (at platform level). */
export const OrganizationStatusSchema = z.enum(['active', 'suspended']);

/** An organization without its timestamps. */
export const OrganizationSummary = z.object({
  id: z.uuid(),
  name: z.string(),
  slug: z.string(),
  enrollmentPolicy: EnrollmentPolicySchema,
  status: OrganizationStatusSchema,
  isPlatform: z.boolean().describe('Whether this is the platform organization created by setup.'),
});

/** An organization without its timestamps. */
export type OrganizationSummary = z.output<typeof OrganizationSummary>;

/** An organization. */
export const OrganizationRecord = OrganizationSummary.extend({ createdAt: timestamp, updatedAt: timestamp });

/** An organization. */
export type OrganizationRecord = z.output<typeof OrganizationRecord>;

/** `active`, `pending` (waiting for approval), `suspended` or `denied`. */
export const MembershipStatusSchema = z.enum(['active', 'pending', 'suspended', 'denied']);

/** One of the caller's organizations with the caller's membership in it. */
export const UserOrganization = z.object({
  organization: OrganizationSummary,
  membership: z.object({
    status: MembershipStatusSchema,
    roles: z.array(z.string()).describe('Role names, lowercase.'),
    createdAt: timestamp,
  }),
});

/** One of the caller's organizations with the caller's membership in it. */
export type UserOrganization = z.output<typeof UserOrganization>;

/** A member of an organization (any membership state). */
export const MemberRecord = z.object({
  userId: z.uuid(),
  email: z.string(),
  firstName: z.string(),
  lastName: z.string(),
  status: MembershipStatusSchema,
  roles: z.array(z.string()).describe('Role names, lowercase.'),
  createdAt: timestamp,
  updatedAt: timestamp,
});

/** A member of an organization (any membership state). */
export type MemberRecord = z.output<typeof MemberRecord>;

/** `pending`, `accepted`, `revoked`, or `expired` (pending past its expiry). */
export const InvitationStatusSchema = z.enum(['pending', 'accepted', 'revoked', 'expired']);

/** An invitation to join an organization. */
export const InvitationRecord = z.object({
  id: z.uuid(),
  organizationId: z.uuid(),
  email: z.string(),
  roles: z.array(z.string()).describe('The roles the invitee gets, lowercase.'),
  status: InvitationStatusSchema,
  expiresAt: timestamp,
  createdAt: timestamp,
  invitedByUserId: z.uuid().nullable(),
});

/** An invitation to join an organization. */
export type InvitationRecord = z.output<typeof InvitationRecord>;

/** A built-in role (`id` and timestamps null) or a custom role of the organization. */
export const RoleRecord = z.object({
  id: z.uuid().nullable().describe('null for a built-in role'),
  name: z.string(),
  description: z.string(),
  permissions: z.array(z.string()),
  builtIn: z.boolean(),
  createdAt: timestamp.nullable(),
  updatedAt: timestamp.nullable(),
});

/** A built-in role (`id` and timestamps null) or a custom role of the organization. */
export type RoleRecord = z.output<typeof RoleRecord>;
