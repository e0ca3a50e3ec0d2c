import { type Clock, isUniqueViolation, newId, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import { AccountAuditActions, type AccountAuditContext, auditRequestFacts } from '../audit/account-actions.js';
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
   * membership, in one transaction, which also records
   * `identity.setup.completed` on the platform trail.
   *
   * @param context who set up and from where: the setup route passes
   *   `via: 'api'` and the request (the actor is then the new administrator);
   *   without it (`idt setup`, the seed file) the actor is the `operator`.
   * @throws ProblemError `Validation.Failed` for bad input, `Setup.AlreadyCompleted` (409)
   *   when an administrator exists, `Identity.EmailTaken` (409) for a taken address,
   *   `Identity.PasswordRejected` (422) for a password the policy refuses.
   */
  completeSetup(input: SetupAdminInput, context?: AccountAuditContext & { readonly via?: 'api' }): Promise<SetupResult>;
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

  async function completeSetup(
    input: SetupAdminInput,
    context: AccountAuditContext & { readonly via?: 'api' } = {},
  ): Promise<SetupResult> {
    const parsed = SetupAdminInput.parse(input);
    if (await options.store.hasAdministrator()) {
      throw new ProblemError('Setup.AlreadyCompleted');
    }
    const password = options.policy ? await options.policy.require(parsed.password, parsed) : parsed.password;
    const passwordHash = await options.hasher.hash(password);
    const slug = slugify(parsed.organizationName) || 'organization';
    const result: SetupResult = { userId: newId(), organizationId: newId() };
    const viaApi = context.via === 'api';
    const audit = {
      action: AccountAuditActions.setupCompleted.action,
      organizationId: null,
      actor:
        context.actor ??
        (viaApi
          ? { type: 'user' as const, id: result.userId, display: parsed.email }
          : { type: 'operator' as const, id: null, display: null }),
      target: { type: 'organization', id: result.organizationId, display: parsed.organizationName },
      ...auditRequestFacts(context),
      metadata: { administratorId: result.userId, administratorEmail: parsed.email, by: viaApi ? 'api' : 'operator' },
    };
    let outcome: 'created' | 'already-complete';
    try {
      outcome = await options.store.createFirstAdministrator(
        {
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
        },
        [audit],
      );
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
