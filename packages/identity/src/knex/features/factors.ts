import { createSecretBox } from '@idt/core';
import { UserSecondFactorAddedEvent, UserSecondFactorRemovedEvent, UserSecondFactorsResetEvent } from '../../factors/events.js';
import { createRecentAuthentication, type RecentAuthentication } from '../../factors/recent-authentication.js';
import { createSecondFactorService, type PasskeyCount, type SecondFactorService } from '../../factors/service.js';
import { createSecondFactorRoutes } from '../../http/routes/factors.js';
import type { SessionService } from '../../sessions/service.js';
import { createKnexSecondFactorStore } from '../factors-store.js';
import type { FeatureContext, IdentityFeature } from './context.js';

/** The purpose TOTP secrets' sealing key is derived for (see `createSecretBox`). */
export const TOTP_SECRET_PURPOSE = 'idt-totp-secrets';

/** What the factors feature needs besides the feature context. */
export interface FactorsFeatureDependencies {
  /** The server secret: TOTP secrets are sealed and recovery codes keyed under keys derived from it. */
  readonly secret: string;
  /** The sessions service (when a session last authenticated). */
  readonly sessions: Pick<SessionService, 'authentication'>;
  /** Whether an organization of the user requires MFA (the organization policy service). */
  readonly requiresMfaForUser: (userId: string) => Promise<boolean>;
  /** The passkeys feature, once composed (read lazily: it may be built after this one). */
  readonly passkeys?: () => PasskeyCount | undefined;
}

/** TOTP, recovery codes and the recent-authentication rule of the account API. */
export interface FactorsFeature extends IdentityFeature {
  readonly services: SecondFactorService;
  /** The recent-authentication check of account-API changes (the passkey routes use it too). */
  readonly recentAuthentication: RecentAuthentication;
}

const HOUR_MS = 3_600_000;

/**
 * Builds the factors feature: its knex store, the second-factor service,
 * the recent-authentication check, the account-API routes, events and a
 * job that prunes expired enrolments.
 *
 * @example
 * const factors = createFactorsFeature(ctx, { secret, sessions, requiresMfaForUser: (id) => policy.requiresMfaForUser(id) });
 * const { enrolmentId, qrSvg } = await factors.services.beginTotp(userId, '');
 */
export function createFactorsFeature(ctx: FeatureContext, deps: FactorsFeatureDependencies): FactorsFeature {
  const { db, outbox, invalidator, clock, logger, settings, audit } = ctx;
  const passkeys = () => deps.passkeys?.();
  const factors = createSecondFactorService({
    store: createKnexSecondFactorStore({ db, outbox, invalidator, ...(audit ? { audit } : {}) }),
    box: createSecretBox(deps.secret, TOTP_SECRET_PURPOSE),
    secret: deps.secret,
    issuer: new URL(settings.publicBaseUrl).host,
    hasher: ctx.hasher,
    requiresMfaForUser: deps.requiresMfaForUser,
    passkeys,
    clock,
    logger,
  });
  const recentAuthentication = createRecentAuthentication({ sessions: deps.sessions, factors, clock });
  return {
    routes: createSecondFactorRoutes(factors, recentAuthentication),
    events: [UserSecondFactorAddedEvent, UserSecondFactorRemovedEvent, UserSecondFactorsResetEvent],
    // The notifications module mails the notices and raises the SecurityAlerts (one sender).
    handlers: [],
    jobs: [{ name: 'identity: prune expired authenticator set-ups', intervalMs: HOUR_MS, run: () => factors.prune() }],
    services: factors,
    recentAuthentication,
  };
}
