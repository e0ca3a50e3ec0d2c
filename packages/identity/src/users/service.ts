import {
  type Clock,
  type CursorPage,
  CursorPageQuery,
  type CursorPageRequest,
  newId,
  systemClock,
  toCursorPage,
} from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import { CacheNamespaces } from '../access/cache-namespaces.js';
import { type AccountsActor, requireUserId, tenantOf } from '../accounts/actor.js';
import { UserDeactivatedEvent, UserReactivatedEvent, UserRegisteredEvent } from '../accounts/events.js';
import type { UserRecord } from '../accounts/records.js';
import type { OrganizationsStore } from '../organizations/store.js';
import type { PasswordPolicy } from '../password-policy/policy.js';
import type { PasswordHasher } from '../passwords.js';
import { EmailSchema, PasswordSchema, PersonNameSchema } from '../schemas.js';
import type { UsersStore } from './store.js';

/** The body of `POST /v1/identity/auth/register`. */
export const RegisterInput = z.object({
  email: EmailSchema,
  password: PasswordSchema,
  firstName: PersonNameSchema,
  lastName: PersonNameSchema,
});

/** Input of {@link UsersService.register}. */
export type RegisterInput = z.input<typeof RegisterInput>;

/** The body of `PATCH /v1/identity/users/me`: the names to change. */
export const UpdateProfileInput = z.object({
  firstName: PersonNameSchema.optional(),
  lastName: PersonNameSchema.optional(),
});

/** Input of {@link UsersService.updateProfile}. */
export type UpdateProfileInput = z.input<typeof UpdateProfileInput>;

/** Input of {@link UsersService.list}: `page` and `pageSize`. */
export type UserListQuery = z.input<typeof CursorPageQuery>;

/** Accounts: self-registration, the caller's profile, the tenant's users, deactivation. */
export interface UsersService {
  /**
   * Registers an account (argon2id password hash) and publishes `UserRegisteredEvent`.
   *
   * @throws ProblemError `Identity.EmailTaken` (409), `Identity.PasswordRejected` (422) for a
   *   password the policy refuses; a zod error for bad input.
   */
  register(input: RegisterInput): Promise<{ userId: string }>;
  /** The caller's own account (no organization needed). */
  profile(actor: AccountsActor): Promise<UserRecord>;
  /** Changes the caller's names; evicts the cached user. */
  updateProfile(actor: AccountsActor, input: UpdateProfileInput): Promise<UserRecord>;
  /** Users with a membership in the caller's organization (`UsersRead`). */
  list(actor: AccountsActor, query?: UserListQuery | CursorPageRequest): Promise<CursorPage<UserRecord>>;
  /**
   * A user with a membership in the caller's organization (`UsersRead`).
   *
   * @throws ProblemError `Identity.UserNotFound` (404) for anyone else.
   */
  get(actor: AccountsActor, userId: string): Promise<UserRecord>;
  /**
   * Deactivates a user: only platform administrators (`UsersDelete` in the
   * platform organization). Revokes every token of the user, evicts caches
   * and publishes `UserDeactivatedEvent`, in one transaction.
   *
   * @throws ProblemError `Auth.Forbidden` (403) outside the platform organization,
   *   `Identity.CannotDeactivateSelf` / `Identity.UserAlreadyDeactivated` (422), `Identity.UserNotFound` (404).
   */
  deactivate(actor: AccountsActor, userId: string): Promise<UserRecord>;
  /**
   * Reactivates a deactivated user (platform administrators only) and
   * publishes `UserReactivatedEvent`.
   *
   * @throws ProblemError as {@link UsersService.deactivate}; `Identity.UserNotDeactivated` (422).
   */
  reactivate(actor: AccountsActor, userId: string): Promise<UserRecord>;
}

/** Dependencies of {@link createUsersService}. */
export interface UsersServiceOptions {
  readonly users: UsersStore;
  readonly organizations: OrganizationsStore;
  readonly hasher: PasswordHasher;
  /** The password policy new passwords must pass; lengths only without one. */
  readonly policy?: PasswordPolicy;
  readonly clock?: Clock;
}

/**
 * The users service.
 *
 * @example
 * const users = createUsersService({ users: usersStore, organizations: organizationsStore, hasher: createArgon2Hasher() });
 * const { userId } = await users.register({ email, password, firstName, lastName });
 */
export function createUsersService(options: UsersServiceOptions): UsersService {
  const { users, organizations, hasher } = options;
  const clock = options.clock ?? systemClock;

  async function found(userId: string): Promise<UserRecord> {
    const user = await users.find(userId);
    if (!user) throw new ProblemError('Identity.UserNotFound');
    return user;
  }

  /** Platform administrators: `UsersDelete` in the platform organization. */
  async function platformAdministration(actor: AccountsActor, userId: string): Promise<UserRecord> {
    const tenant = tenantOf(actor, 'UsersDelete');
    const organization = await organizations.find(tenant);
    if (!organization?.isPlatform) {
      throw new ProblemError('Auth.Forbidden', 'Only platform administrators can deactivate or reactivate users.');
    }
    return found(userId.toLowerCase());
  }

  return {
    async register(input) {
      const parsed = RegisterInput.parse(input);
      const password = options.policy ? await options.policy.require(parsed.password, parsed) : parsed.password;
      const passwordHash = await hasher.hash(password);
      const userId = newId();
      const user = {
        id: userId,
        email: parsed.email,
        firstName: parsed.firstName,
        lastName: parsed.lastName,
        passwordHash,
        createdAt: clock.now().toISOString(),
      };
      await users.transaction(async (tx) => {
        // Thrown inside: the taken address's unique violation rolls the transaction back.
        if (!(await tx.insert(user))) throw new ProblemError('Identity.EmailTaken');
        await tx.publish([{ event: UserRegisteredEvent, payload: { userId, email: user.email } }]);
      });
      return { userId };
    },

    profile: (actor) => found(requireUserId(actor)),

    async updateProfile(actor, input) {
      const userId = requireUserId(actor);
      const patch = UpdateProfileInput.parse(input);
      if (patch.firstName !== undefined || patch.lastName !== undefined) {
        const at = clock.now().toISOString();
        const updated = await users.transaction(async (tx) => {
          if (!(await tx.updateProfile(userId, patch, at))) return false;
          await tx.evict([{ namespace: CacheNamespaces.users, key: userId }]);
          return true;
        });
        if (!updated) throw new ProblemError('Identity.UserNotFound');
      }
      return found(userId);
    },

    async list(actor, query = {}) {
      const tenant = tenantOf(actor, 'UsersRead');
      // The route hands over its parsed query (the cursor already decoded); other callers pass the raw one.
      const page = typeof query.cursor === 'object' ? (query as CursorPageRequest) : CursorPageQuery.parse(query);
      return toCursorPage(await users.listInOrganization(tenant, page), page);
    },

    async get(actor, userId) {
      const tenant = tenantOf(actor, 'UsersRead');
      const user = await users.findInOrganization(tenant, userId.toLowerCase());
      if (!user) throw new ProblemError('Identity.UserNotFound');
      return user;
    },

    async deactivate(actor, userId) {
      const user = await platformAdministration(actor, userId);
      if (user.id === actor.userId) throw new ProblemError('Identity.CannotDeactivateSelf');
      if (user.status === 'deactivated') throw new ProblemError('Identity.UserAlreadyDeactivated');
      const at = clock.now().toISOString();
      const deactivated = await users.transaction(async (tx) => {
        if (!(await tx.deactivate(user.id, at))) return false;
        await tx.evict([
          { namespace: CacheNamespaces.users, key: user.id },
          { namespace: CacheNamespaces.revocations, key: `user:${user.id}` },
        ]);
        await tx.publish([
          { event: UserDeactivatedEvent, payload: { userId: user.id, deactivatedAt: at, deactivatedByUserId: actor.userId } },
        ]);
        return true;
      });
      if (!deactivated) throw new ProblemError('Identity.UserAlreadyDeactivated');
      return found(user.id);
    },

    async reactivate(actor, userId) {
      const user = await platformAdministration(actor, userId);
      if (user.status === 'active') throw new ProblemError('Identity.UserNotDeactivated');
      const at = clock.now().toISOString();
      const reactivated = await users.transaction(async (tx) => {
        if (!(await tx.reactivate(user.id, at))) return false;
        await tx.evict([{ namespace: CacheNamespaces.users, key: user.id }]);
        await tx.publish([
          { event: UserReactivatedEvent, payload: { userId: user.id, reactivatedAt: at, reactivatedByUserId: actor.userId } },
        ]);
        return true;
      });
      if (!reactivated) throw new ProblemError('Identity.UserNotDeactivated');
      return found(user.id);
    },
  };
}
