import type { RecentAuthentication } from '../../factors/recent-authentication.js';
import { createPasskeyRoutes } from '../../http/routes/passkeys.js';
import { UserPasskeyAddedEvent, UserPasskeyRemovedEvent } from '../../passkeys/events.js';
import { createPasskeyService, type PasskeySecondFactorPolicy, type PasskeyService } from '../../passkeys/service.js';
import { createKnexPasskeyStore } from '../passkeys-store.js';
import type { FeatureContext, IdentityFeature } from './context.js';

/** Passkeys (WebAuthn): the service (`identity.passkeys`), its account routes, events and pruning job. */
export interface PasskeysFeature extends IdentityFeature {
  readonly services: PasskeyService;
}

/** What the passkeys feature borrows from the others. */
export interface PasskeysFeatureDeps {
  /** The recent-authentication rule of account changes (C1's factors feature). */
  readonly recentAuthentication?: RecentAuthentication;
  /** The last-factor rule: the organization's `requireMfa` and the user's TOTP. */
  readonly secondFactors?: PasskeySecondFactorPolicy;
}

const HOUR_MS = 3_600_000;

/**
 * Builds the passkeys feature: the relying party is the issuer
 * (`publicBaseUrl`: its host is the RP id, its origin the expected origin;
 * the sign-in pages' `authUrl` origin is accepted too).
 *
 * @example
 * const passkeys = createPasskeysFeature(ctx, { recentAuthentication, secondFactors });
 * const count = await passkeys.services.count(userId);
 */
export function createPasskeysFeature(ctx: FeatureContext, deps: PasskeysFeatureDeps = {}): PasskeysFeature {
  const { db, outbox, invalidator, settings, audit } = ctx;
  const passkeys = createPasskeyService({
    store: createKnexPasskeyStore({ db, outbox, invalidator, ...(audit ? { audit } : {}) }),
    issuer: settings.publicBaseUrl,
    otherOrigins: [settings.authUrl],
    ...(deps.secondFactors ? { secondFactors: deps.secondFactors } : {}),
    clock: ctx.clock,
    logger: ctx.logger,
  });
  return {
    routes: createPasskeyRoutes(passkeys, deps.recentAuthentication),
    events: [UserPasskeyAddedEvent, UserPasskeyRemovedEvent],
    handlers: [],
    jobs: [{ name: 'identity: prune passkey challenges', intervalMs: HOUR_MS, run: () => passkeys.prune() }],
    services: passkeys,
  };
}
