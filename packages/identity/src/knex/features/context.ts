import type {
  AuditTrail,
  Clock,
  Environment,
  EventDefinition,
  EventHandlerDefinition,
  EventOutbox,
  Logger,
  Mailer,
  Route,
} from '@idt/core';
import type { CacheInvalidator, WindowCounter } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { ApiKeyLookup, SessionLookup } from '../../access/store.js';
import type { PasswordPolicy } from '../../password-policy/policy.js';
import type { PasswordHasher } from '../../passwords.js';
import type { TokenMac } from '../../tokens.js';

/** Settings of the identity module (mapped from `IdtConfig` by the host). */
export interface IdentitySettings {
  readonly environment: Environment;
  /** The public base URL of the API, prefix included: links in mail point here. */
  readonly publicBaseUrl: string;
  /** Where the sign-in pages live. */
  readonly authUrl: string;
  /** The sign-in session cookie. */
  readonly sessionCookieName: string;
  /** E-mail change requests per user per window (0 refuses all). */
  readonly emailChangeMaxRequests: number;
  /** Length of the e-mail change window, in seconds (positive). */
  readonly emailChangeWindowSeconds: number;
  /** Whether a module mails e-mail change confirmations; without one, requests answer 503. Default true. */
  readonly emailChangeMailed?: boolean;
  // A: passwords
  /** `IDT_PASSWORD_MIN_LENGTH`: the fewest characters of a new password (12 to 256; default 12). */
  readonly passwordMinLength?: number;
  /** `IDT_BREACHED_PASSWORDS_URL`: a Have I Been Pwned style range endpoint; unset, no breach check. */
  readonly breachedPasswordsUrl?: string;
  /** `IDT_PASSWORD_RESET_IP_MAX_REQUESTS`: password reset requests per client address per 15 minutes (default 20). */
  readonly passwordResetMaxRequestsPerIp?: number;
  // B: verified e-mail
  /** `IDT_REQUIRE_VERIFIED_EMAIL`: every sign-in needs a verified e-mail address. Default false. */
  readonly requireVerifiedEmail?: boolean;
}

/** What every identity feature is built from. */
export interface FeatureContext {
  readonly db: Knex;
  readonly settings: IdentitySettings;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly hasher: PasswordHasher;
  readonly mailer: Mailer;
  /** Writes integration events in the caller's transaction. */
  readonly outbox: EventOutbox;
  /** The audit trail (`ctx.audit`): features register their actions and their stores record in their transactions. */
  readonly audit?: AuditTrail;
  /** Evicts cached access data in every instance after commit (see `CacheNamespaces`). */
  readonly invalidator: CacheInvalidator;
  /** Anchored fixed-window counters for per-user and per-address limits. */
  readonly counter: WindowCounter;
  /** HMAC link tokens. */
  readonly tokens: TokenMac;
  // A: passwords
  /** The password policy every new password goes through (the module always sets it; lengths only without). */
  readonly passwordPolicy?: PasswordPolicy;
  /** The caller's permissions in an organization (cached; empty unless the membership is active). */
  permissionsOf(userId: string, organizationId: string): Promise<Set<string>>;
}

/** What a feature contributes to the module. */
export interface IdentityFeature {
  readonly routes: readonly Route[];
  /** Events the feature publishes (for the catalog). */
  readonly events: readonly EventDefinition<any>[];
  /** Handlers the host subscribes on its event bus. */
  readonly handlers: readonly EventHandlerDefinition<any>[];
  /** Periodic maintenance (pruning), run by the host. */
  readonly jobs: ReadonlyArray<{ readonly name: string; readonly intervalMs: number; run(): Promise<unknown> }>;
}

/** A feature that also supplies credential lookups to the authentication pipeline. */
export interface CredentialsFeature extends IdentityFeature {
  readonly apiKeyLookup: ApiKeyLookup;
  readonly sessionLookup: SessionLookup;
}
