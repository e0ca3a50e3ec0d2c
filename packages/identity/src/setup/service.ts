import { type Clock, isUniqueViolation, newId, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import type { PasswordPolicy } from '../password-policy/policy.js';
import type { PasswordHasher } from '../passwords.js';
import { EmailSchema, OrganizationNameSchema, PasswordSchema, PersonNameSchema } from '../schemas.js';
import { slugify } from '../slug.js';
import type { SetupStore } from './store.js';

/** The body of `POST /v1/identity/setup/admin` and of `idt setup`. */
export const SetupAdminInput = z.object({
  email: EmailSchema,
  password: PasswordSchema,
  firstName: PersonNameSchema,
  lastName: PersonNameSchema,
  organizationName: OrganizationNameSchema,
});

/** Input of {@link SetupService.completeSetup}. */
export type SetupAdminInput = z.input<typeof SetupAdminInput>;

/** What the bootstrap created. */
export interface SetupResult {
  readonly userId: string;
  readonly organizationId: string;
}

/** Setup mode (SPEC 3.1): whether it is on, and the bootstrap that ends it. */
export interface SetupService {
  /** Whether the service still needs its first administrator; asks the store until it has one. */
  isSetupRequired(): Promise<boolean>;
  /**
   * Creates the first administrator: user, platform organization and owner
   * membership, in one transaction.
   *
   * @throws ProblemError `Validation.Failed` for bad input, `Setup.AlreadyCompleted` (409)
   *   when an administrator exists, `Identity.EmailTaken` (409) for a taken address,
   *   `Identity.PasswordRejected` (422) for a password the policy refuses.
   */
  completeSetup(input: SetupAdminInput): Promise<SetupResult>;
}

/** Dependencies of {@link createSetupService}. */
export interface SetupServiceOptions {
  readonly store: SetupStore;
  readonly hasher: PasswordHasher;
  /** The password policy the administrator's password must pass; lengths only without one. */
  readonly policy?: PasswordPolicy;
  readonly clock?: Clock;
  /** Called after the bootstrap commits. */
  readonly onCompleted?: (result: SetupResult & { email: string }) => void | Promise<void>;
}

/**
 * The setup service. The HTTP endpoint, `idt setup` and the seeder's admin
 * block all run this same bootstrap.
 *
 * @example
 * const setup = createSetupService({ store: createKnexSetupStore(db), hasher: createArgon2Hasher() });
 * if (await setup.isSetupRequired()) await setup.completeSetup({ email, password, firstName, lastName, organizationName });
 */
export function createSetupService(options: SetupServiceOptions): SetupService {
  const clock = options.clock ?? systemClock;
  // Setup cannot be undone: once done, it is remembered; until then, the store is asked every time.
  let setUp = false;

  async function isSetupRequired(): Promise<boolean> {
    if (setUp) return false;
    setUp = await options.store.hasAdministrator();
    return !setUp;
  }

  async function completeSetup(input: SetupAdminInput): Promise<SetupResult> {
    const parsed = SetupAdminInput.parse(input);
    if (await options.store.hasAdministrator()) {
      throw new ProblemError('Setup.AlreadyCompleted');
    }
    const password = options.policy ? await options.policy.require(parsed.password, parsed) : parsed.password;
    const passwordHash = await options.hasher.hash(password);
    const slug = slugify(parsed.organizationName) || 'organization';
    const result: SetupResult = { userId: newId(), organizationId: newId() };
    let outcome: 'created' | 'already-complete';
    try {
      outcome = await options.store.createFirstAdministrator({
        user: {
          id: result.userId,
          email: parsed.email,
          firstName: parsed.firstName,
          lastName: parsed.lastName,
          passwordHash,
        },
        organization: { id: result.organizationId, name: parsed.organizationName, slug },
        membershipId: newId(),
        createdAt: clock.now().toISOString(),
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new ProblemError('Identity.EmailTaken');
      throw error;
    }
    if (outcome === 'already-complete') throw new ProblemError('Setup.AlreadyCompleted');
    setUp = true;
    await options.onCompleted?.({ ...result, email: parsed.email });
    return result;
  }

  return { isSetupRequired, completeSetup };
}
