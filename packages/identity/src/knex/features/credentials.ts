import type { ApiKeyService } from '../../api-keys/service.js';
import { createApiKeyService } from '../../api-keys/service.js';
import { UserEmailChangedEvent, UserEmailChangeRequestedEvent } from '../../email-change/events.js';
import { createEmailChangeService, type EmailChangeService } from '../../email-change/service.js';
import { createApiKeyRoutes } from '../../http/routes/api-keys.js';
import { createEmailChangeRoutes } from '../../http/routes/email-change.js';
import { createPasswordlessRoutes } from '../../http/routes/passwordless.js';
import { createSessionRoutes } from '../../http/routes/sessions.js';
import { createWhoamiRoutes } from '../../http/routes/whoami.js';
import { createPasswordlessService, type PasswordlessService } from '../../passwordless/service.js';
import { UserSessionEvictedEvent, UserSessionRevokedEvent } from '../../sessions/events.js';
import { createSessionService, type SessionService } from '../../sessions/service.js';
import { createKnexApiKeyStore } from '../api-key-store.js';
import { createKnexEmailChangeStore } from '../email-change-store.js';
import { createKnexPasswordlessStore } from '../passwordless-store.js';
import { createKnexSessionStore } from '../session-store.js';
import type { CredentialsFeature as BaseCredentialsFeature, FeatureContext } from './context.js';

/** The services of the credentials feature, for hosts and for the sign-in pages. */
export interface CredentialsServices {
  readonly sessions: SessionService;
  readonly apiKeys: ApiKeyService;
  readonly emailChange: EmailChangeService;
  readonly passwordless: PasswordlessService;
}

/** Sessions, API keys, e-mail change and passwordless sign-in. */
export interface CredentialsFeature extends BaseCredentialsFeature {
  readonly services: CredentialsServices;
}

const HOUR_MS = 3_600_000;

/**
 * Builds the credentials feature: its knex stores, services, routes, events,
 * pruning jobs, and the API-key and session lookups of the
 * credential resolver.
 *
 * @example
 * const credentials = createCredentialsFeature(ctx);
 * const { session, cookieValue } = await credentials.services.sessions.start(userId, { amr: ['pwd'] });
 */
export function createCredentialsFeature(ctx: FeatureContext): CredentialsFeature {
  const { db, outbox, invalidator, clock, logger, settings, audit } = ctx;
  const storeOptions = { db, outbox, invalidator, ...(audit ? { audit } : {}) };
  const sessions = createSessionService({
    store: createKnexSessionStore(storeOptions),
    cookieName: settings.sessionCookieName,
    clock,
    logger,
  });
  const apiKeys = createApiKeyService({ store: createKnexApiKeyStore(storeOptions), clock, logger });
  const emailChangeStore = createKnexEmailChangeStore(storeOptions);
  const emailChange = createEmailChangeService({
    store: emailChangeStore,
    counter: ctx.counter,
    tokens: ctx.tokens,
    mailer: ctx.mailer,
    maxRequests: settings.emailChangeMaxRequests,
    windowSeconds: settings.emailChangeWindowSeconds,
    publicBaseUrl: settings.publicBaseUrl,
    confirmationsMailed: settings.emailChangeMailed ?? true,
    clock,
    logger,
  });
  const passwordless = createPasswordlessService({
    store: createKnexPasswordlessStore(storeOptions),
    sessions,
    counter: ctx.counter,
    tokens: ctx.tokens,
    mailer: ctx.mailer,
    publicBaseUrl: settings.publicBaseUrl,
    clock,
    logger,
  });

  return {
    routes: [
      ...createSessionRoutes(sessions),
      ...createWhoamiRoutes(),
      ...createApiKeyRoutes(apiKeys),
      ...createEmailChangeRoutes(emailChange),
      ...createPasswordlessRoutes(passwordless, sessions),
    ],
    events: [UserSessionEvictedEvent, UserSessionRevokedEvent, UserEmailChangeRequestedEvent, UserEmailChangedEvent],
    // The notifications module mails e-mail change confirmations and notices (one sender).
    handlers: [],
    jobs: [
      { name: 'identity: prune ended sessions', intervalMs: HOUR_MS, run: () => sessions.prune() },
      {
        name: 'identity: prune passwordless requests and e-mail changes',
        intervalMs: HOUR_MS,
        run: async () => (await passwordless.prune()) + (await emailChange.prune()),
      },
    ],
    services: { sessions, apiKeys, emailChange, passwordless },
    apiKeyLookup: apiKeys,
    sessionLookup: sessions,
  };
}
