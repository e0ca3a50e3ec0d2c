import { randomToken } from '@idt/core';
import { verifyPassword } from '../password-policy/policy.js';
import type { PasswordHasher } from '../passwords.js';

/** What an OpenID provider releases about a user (OpenID Connect standard claims plus `org_id`, `org_name`, `roles`). */
export interface SignInClaims {
  readonly sub: string;
  readonly name: string;
  readonly given_name: string;
  readonly family_name: string;
  readonly email: string;
  readonly email_verified: boolean;
  readonly org_id?: string;
  /** Omitted when the organization has no name. */
  readonly org_name?: string;
  /** Role names of the active membership in `org_id`. */
  readonly roles?: string[];
}

/** The membership states sign-in distinguishes. */
export type SignInMembershipState = 'active' | 'pending' | 'suspended' | 'denied' | 'not_a_member';

/** Reads for sign-in; persistence only. */
export interface SignInStore {
  /** An active user with a password, by (lowercase) e-mail address. */
  findPasswordUser(email: string): Promise<{ id: string; passwordHash: string } | undefined>;
  /** An active user's profile. */
  findActiveUser(
    userId: string,
  ): Promise<{ id: string; email: string; emailVerified: boolean; firstName: string; lastName: string } | undefined>;
  /** The membership of a user in an organization with its roles and the organization's name and status. */
  findMembership(
    userId: string,
    organizationId: string,
  ): Promise<{ status: string; roles: string[]; organizationName: string; organizationStatus: string } | undefined>;
  /** Organizations where the user's membership and the organization are active. */
  activeOrganizations(userId: string): Promise<Array<{ id: string; name: string }>>;
  /** An organization by id. */
  findOrganization(organizationId: string): Promise<SignInOrganization | undefined>;
}

/** An organization as sign-in and client registration see it. */
export interface SignInOrganization {
  readonly id: string;
  readonly name: string;
  readonly slug: string;
  readonly status: string;
  readonly isPlatform: boolean;
}

/** Password verification and claims for the sign-in pages and the OpenID provider. */
export interface SignInService {
  /**
   * The user id when the address and password match an active account;
   * `undefined` otherwise. Unknown addresses cost one hash verification too,
   * so response times do not reveal which addresses have accounts.
   */
  authenticate(email: string, password: string): Promise<string | undefined>;
  /** Claims of an active user working in an organization (org claims only for an active membership). */
  claims(userId: string, organizationId: string | null): Promise<SignInClaims | undefined>;
  activeOrganizations(userId: string): Promise<Array<{ id: string; name: string }>>;
  membershipState(userId: string, organizationId: string): Promise<SignInMembershipState>;
  /** An organization by id (name, slug, status, whether it is the platform organization). */
  organization(organizationId: string): Promise<SignInOrganization | undefined>;
}

/**
 * Creates the sign-in service.
 *
 * @example
 * const signIn = createSignInService({ store: createKnexSignInStore(db), hasher });
 * const userId = await signIn.authenticate('ada@example.com', password);
 */
export function createSignInService(options: { store: SignInStore; hasher: PasswordHasher }): SignInService {
  const { store, hasher } = options;
  let dummy: Promise<string> | undefined;
  return {
    async authenticate(email, password) {
      const user = await store.findPasswordUser(email.trim().toLowerCase());
      if (!user) {
        dummy ??= hasher.hash(randomToken(16));
        await hasher.verify(await dummy, password);
        return undefined;
      }
      // Passwords are hashed in their NFKC form (older hashes as typed): see verifyPassword.
      return (await verifyPassword(hasher, user.passwordHash, password)) ? user.id : undefined;
    },
    async claims(userId, organizationId) {
      const user = await store.findActiveUser(userId);
      if (!user) return undefined;
      const claims: SignInClaims = {
        sub: user.id,
        name: `${user.firstName} ${user.lastName}`.trim(),
        given_name: user.firstName,
        family_name: user.lastName,
        email: user.email,
        email_verified: user.emailVerified,
      };
      if (!organizationId) return claims;
      const membership = await store.findMembership(userId, organizationId);
      if (membership?.status !== 'active' || membership.organizationStatus !== 'active') return claims;
      return {
        ...claims,
        org_id: organizationId,
        ...(membership.organizationName.trim() ? { org_name: membership.organizationName } : {}),
        roles: [...membership.roles].sort(),
      };
    },
    activeOrganizations: (userId) => store.activeOrganizations(userId),
    organization: (organizationId) => store.findOrganization(organizationId),
    async membershipState(userId, organizationId) {
      const membership = await store.findMembership(userId, organizationId);
      if (!membership) return 'not_a_member';
      // A suspended organization suspends every membership in it.
      if (membership.organizationStatus !== 'active' && membership.status === 'active') return 'suspended';
      return membership.status as SignInMembershipState;
    },
  };
}
