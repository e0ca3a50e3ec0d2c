import { AccountAuditActions } from '../../audit/account-actions.js';
import { OrganizationAuditActions } from '../../audit/organization-actions.js';
import { createPasswordRoutes } from '../../http/routes/passwords.js';
import type { PasswordPolicy } from '../../password-policy/policy.js';
import { PasswordAuditActions } from '../../password-reset/audit.js';
import {
  UserPasswordChangedEvent,
  UserPasswordResetEvent,
  UserPasswordResetRequestedEvent,
} from '../../password-reset/events.js';
import { createPasswordServices, type PasswordChangeService, type PasswordResetService } from '../../password-reset/service.js';
import { createKnexPasswordResetStore } from '../password-reset-store.js';
import type { FeatureContext, IdentityFeature } from './context.js';

/** The services of the passwords feature (`identity.passwords`). */
export interface PasswordsServices {
  /** The password policy every password set goes through (setup, registration, reset, change, the CLI). */
  readonly policy: PasswordPolicy;
  /** The forgotten-password flow. */
  readonly reset: PasswordResetService;
  /** A signed-in user's password change. */
  readonly change: PasswordChangeService;
}

/** Forgotten passwords and password changes. */
export interface PasswordsFeature extends IdentityFeature {
  readonly services: PasswordsServices;
}

const HOUR_MS = 3_600_000;

/**
 * Builds the passwords feature: the reset store, the reset and change
 * services, their routes, events and pruning job, around the module's
 * password policy.
 *
 * @example
 * const passwords = createPasswordsFeature(ctx, policy);
 * await passwords.services.reset.request({ email: 'ada@example.com' });
 */
export function createPasswordsFeature(ctx: FeatureContext, policy: PasswordPolicy): PasswordsFeature {
  const { db, outbox, invalidator, settings, audit } = ctx;
  audit?.register(Object.values(PasswordAuditActions));
  audit?.register(Object.values(OrganizationAuditActions)); // organizations, memberships, invitations, roles, SCIM (issue 51)
  audit?.register(Object.values(AccountAuditActions)); // account security: factors, passkeys, e-mail, sessions, setup, policy, API keys
  const { reset, change } = createPasswordServices({
    store: createKnexPasswordResetStore({ db, outbox, invalidator, ...(audit ? { audit } : {}) }),
    policy,
    hasher: ctx.hasher,
    counter: ctx.counter,
    tokens: ctx.tokens,
    authUrl: settings.authUrl,
    // The module that mails e-mail change links mails reset links too (@idt/notifications).
    linksMailed: settings.emailChangeMailed ?? true,
    ...(settings.passwordResetMaxRequestsPerIp !== undefined ? { maxRequestsPerIp: settings.passwordResetMaxRequestsPerIp } : {}),
    clock: ctx.clock,
    logger: ctx.logger,
  });
  return {
    routes: createPasswordRoutes(reset, change),
    events: [UserPasswordResetRequestedEvent, UserPasswordResetEvent, UserPasswordChangedEvent],
    // The notifications module mails the links and notices (one sender).
    handlers: [],
    jobs: [{ name: 'identity: prune password resets', intervalMs: HOUR_MS, run: () => reset.prune() }],
    services: { policy, reset, change },
  };
}
