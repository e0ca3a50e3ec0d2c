import { createSetupGate, type EnvironmentVariable, envReader, type IdtModule } from '@idt/core';
import type { ClientLookup } from './access/store.js';
import { AccountsCodes } from './accounts/problems.js';
import { CredentialCodes } from './credentials/problems.js';
import { EmailVerificationCodes } from './email-verification/problems.js';
import { SecondFactorCodes } from './factors/problems.js';
import { identityMigrations } from './knex/migrations.js';
import type { KnexIdentity } from './knex/module.js';
import { PasskeyCodes } from './passkeys/problems.js';
import { PasswordPolicyCodes } from './password-policy/problems.js';
import { PasswordResetCodes } from './password-reset/problems.js';
import type { PasswordHasher } from './passwords.js';
import { IdentityCodes } from './problems.js';
import { ScimCodes } from './scim/problems.js';

/** The name of the sign-in session cookie shared by the identity API and the sign-in pages. */
export const SESSION_COOKIE_NAME = 'idt_session';

/** The capability through which the identity module asks about OAuth clients (provided by `@idt/oidc`). */
export const CLIENT_LOOKUP_CAPABILITY = 'identity.clients';

/**
 * The capability a module provides (any value) when it mails e-mail change
 * confirmations and notices: `@idt/notifications` does. Without it the
 * identity module refuses e-mail change requests with 503.
 */
export const EMAIL_CHANGE_MAIL_CAPABILITY = 'identity.emailChangeMail';

/** Settings of the identity module. */
export interface IdentityModuleSettings {
  /** `IDT_EMAIL_CHANGE_MAX_REQUESTS`: e-mail change requests per user per window (default 3; 0 refuses all). */
  readonly emailChangeMaxRequests: number;
  /** `IDT_EMAIL_CHANGE_WINDOW_SECONDS`: the window, which starts at the first request (default 3600). */
  readonly emailChangeWindowSeconds: number;
  // A: passwords
  /** `IDT_PASSWORD_MIN_LENGTH`: the fewest characters of a new password (default 12; 12 to 256). */
  readonly passwordMinLength: number;
  /** `IDT_BREACHED_PASSWORDS_URL`: a Have I Been Pwned style range endpoint (e.g. `https://api.pwnedpasswords.com/range`); unset, no breach check. */
  readonly breachedPasswordsUrl: string | undefined;
  /** `IDT_PASSWORD_RESET_IP_MAX_REQUESTS`: password reset requests per client address per 15 minutes (default 20). */
  readonly passwordResetMaxRequestsPerIp: number;
  // B: verified e-mail
  /** `IDT_REQUIRE_VERIFIED_EMAIL`: every sign-in needs a verified e-mail address (default false; organizations can require it for themselves). */
  readonly requireVerifiedEmail: boolean;
}

/** Options of {@link identity}; each wins over its environment variable. */
export interface IdentityModuleOptions extends Partial<IdentityModuleSettings> {
  /** Password hashing; argon2id with OWASP parameters by default. */
  readonly hasher?: PasswordHasher;
}

/** The services of the identity module (`idt.services.identity`). */
export type IdentityServices = KnexIdentity;

/** The environment variables of the identity module. */
export const identityVariables: readonly EnvironmentVariable[] = [
  {
    name: 'IDT_EMAIL_CHANGE_MAX_REQUESTS',
    description: 'E-mail change requests per user per window (0 refuses all).',
    default: '3',
  },
  { name: 'IDT_EMAIL_CHANGE_WINDOW_SECONDS', description: 'The e-mail change window, from the first request.', default: '3600' },
  // A: passwords
  { name: 'IDT_PASSWORD_MIN_LENGTH', description: 'The fewest characters of a new password (12 to 256).', default: '12' },
  {
    name: 'IDT_BREACHED_PASSWORDS_URL',
    description:
      'A Have I Been Pwned style range endpoint (e.g. https://api.pwnedpasswords.com/range): new passwords found in breaches are refused. Unset: no breach check.',
  },
  {
    name: 'IDT_PASSWORD_RESET_IP_MAX_REQUESTS',
    description: 'Password reset requests per client address per 15 minutes.',
    default: '20',
  },
  {
    name: 'IDT_REQUIRE_VERIFIED_EMAIL',
    description: 'Refuse sign-in until the e-mail address is verified (organizations can also require it for themselves).',
    default: 'false',
  },
];

/**
 * The identity module: setup, users, organizations, memberships, roles,
 * invitations, sessions, API keys, e-mail change and passwordless sign-in
 * under `/v1/identity`, the setup gate, and the credential resolver every
 * authenticated route uses.
 *
 * @example
 * const idt = await createIdt({ database: 'sqlite:./data/idt.sqlite', modules: [identity(), oidc()] });
 */
export function identity(options: IdentityModuleOptions = {}): IdtModule<'identity', IdentityServices, IdentityModuleSettings> {
  const { hasher, ...overrides } = options;
  return {
    id: 'identity',
    migrations: identityMigrations,
    problemCodes: [
      ...Object.keys(IdentityCodes),
      ...Object.keys(AccountsCodes),
      ...Object.keys(CredentialCodes),
      // B: verified e-mail
      ...Object.keys(EmailVerificationCodes),
      // A: passwords
      ...Object.keys(PasswordPolicyCodes),
      ...Object.keys(PasswordResetCodes),
      // C1: factors
      ...Object.keys(SecondFactorCodes),
      // D: passkeys
      ...Object.keys(PasskeyCodes),
      // SCIM provisioning
      ...Object.keys(ScimCodes),
    ],
    settings: {
      variables: identityVariables,
      resolve(env) {
        const read = envReader(env);
        const settings = {
          emailChangeMaxRequests:
            overrides.emailChangeMaxRequests ?? read.integer('IDT_EMAIL_CHANGE_MAX_REQUESTS', { default: 3 }),
          emailChangeWindowSeconds:
            overrides.emailChangeWindowSeconds ?? read.integer('IDT_EMAIL_CHANGE_WINDOW_SECONDS', { default: 3600, min: 1 }),
          // A: passwords
          passwordMinLength:
            overrides.passwordMinLength ?? read.integer('IDT_PASSWORD_MIN_LENGTH', { default: 12, min: 12, max: 256 }),
          breachedPasswordsUrl: overrides.breachedPasswordsUrl ?? read.string('IDT_BREACHED_PASSWORDS_URL'),
          passwordResetMaxRequestsPerIp:
            overrides.passwordResetMaxRequestsPerIp ??
            read.integer('IDT_PASSWORD_RESET_IP_MAX_REQUESTS', { default: 20, min: 1 }),
          requireVerifiedEmail: overrides.requireVerifiedEmail ?? read.boolean('IDT_REQUIRE_VERIFIED_EMAIL', false),
        };
        if (!Number.isInteger(settings.emailChangeWindowSeconds) || settings.emailChangeWindowSeconds <= 0) {
          read.problem('IDT_EMAIL_CHANGE_WINDOW_SECONDS: must be a positive whole number of seconds');
        }
        if (settings.breachedPasswordsUrl !== undefined && !/^https?:\/\/[^/]/i.test(settings.breachedPasswordsUrl)) {
          read.problem('IDT_BREACHED_PASSWORDS_URL: must be an http or https URL');
        }
        read.done();
        return settings;
      },
    },
    async setup(ctx) {
      const { createKnexIdentity } = await import('./knex/module.js');
      const clients = ctx.capability<ClientLookup>(CLIENT_LOOKUP_CAPABILITY);
      const module = createKnexIdentity({
        db: ctx.db,
        settings: {
          environment: ctx.config.environment,
          publicBaseUrl: ctx.config.publicBaseUrl,
          authUrl: ctx.config.authUrl,
          sessionCookieName: SESSION_COOKIE_NAME,
          emailChangeMaxRequests: ctx.settings.emailChangeMaxRequests,
          emailChangeWindowSeconds: ctx.settings.emailChangeWindowSeconds,
          emailChangeMailed: ctx.capability(EMAIL_CHANGE_MAIL_CAPABILITY) !== undefined,
          // A: passwords
          passwordMinLength: ctx.settings.passwordMinLength,
          ...(ctx.settings.breachedPasswordsUrl ? { breachedPasswordsUrl: ctx.settings.breachedPasswordsUrl } : {}),
          passwordResetMaxRequestsPerIp: ctx.settings.passwordResetMaxRequestsPerIp,
          requireVerifiedEmail: ctx.settings.requireVerifiedEmail,
        },
        secret: ctx.secret,
        mailer: ctx.mailer,
        outbox: ctx.events,
        audit: ctx.audit,
        invalidator: ctx.invalidator,
        counter: ctx.counter,
        clock: ctx.clock,
        logger: ctx.logger,
        ...(hasher ? { hasher } : {}),
        ...(clients ? { clients } : {}),
      });
      return {
        services: module,
        routes: module.routes,
        events: module.events,
        handlers: module.handlers,
        jobs: module.jobs,
        gates: [createSetupGate({ isSetupRequired: () => module.setup.isSetupRequired() })],
        authentication: { resolver: module.resolver, sessionCookieName: SESSION_COOKIE_NAME },
      };
    },
  };
}
