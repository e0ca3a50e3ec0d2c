import { type Clock, isDatabaseUnavailable, type Logger, silentLogger, systemClock } from '@idt/core';
import type { SignInFederationSlot } from '../federation.js';
import { signInAsset } from './assets.js';
import { dispatch } from './dispatcher.js';
import { signInErrorPages } from './error-pages.js';
import { Interaction, type SignInServices } from './interaction.js';
import { safeParams } from './page-forms.js';
import type { PageHandler } from './page-request.js';
import { type InteractionDetails, ProviderExchange } from './provider-exchange.js';

/**
 * Options of {@link createInteractionHandler}: the {@link SignInServices}
 * that are not derived from the others (paths, cookie name), with defaults
 * for the clock, the logger and `trustProxy`.
 */
export interface InteractionHandlerOptions
  extends Omit<SignInServices, 'sessionCookieName' | 'trustProxy' | 'clock' | 'logger' | 'base' | 'assets' | 'federation'> {
  /** The sign-in session cookie (also read by the API for sign-in hosts). */
  readonly sessionCookie: { readonly name: string };
  /** Take the client IP of a session from `X-Forwarded-For` (a trusted proxy sets it). */
  readonly trustProxy?: boolean;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** The slot a federation module fills (read at request time); no federation without one. */
  readonly federation?: SignInFederationSlot;
}

/** The sign-in page paths, relative to the deployment prefix. */
export const INTERACTION_BASE = '/connect/interaction';
/** Where the sign-in pages' stylesheet and scripts live. */
export const ASSETS_BASE = '/connect/assets';

const INTERACTION_ID = /^[A-Za-z0-9_-]{1,64}$/;
const NO_TARGETS: readonly string[] = Object.freeze([]);

/**
 * The sign-in pages: password sign-in, magic link and one-time code,
 * organization choice, consent; served as accessible HTML forms with CSRF
 * tokens and no inline scripts. Returns a page handler (see `pageSurface`)
 * that takes the requests under `/connect/interaction/{uid}/{action}` and
 * `/connect/assets`, and declines every other one.
 *
 * A request to an interaction finds it through oidc-provider (its cookie),
 * then `dispatch` decides the step that answers it (`steps/*.ts`, a file
 * per step with its page). Failures are pages too: an unknown or expired
 * interaction (400), unreadable text (400), an expired form (403), a
 * failure (500) and an unreachable database (503 with `Retry-After`).
 */
export function createInteractionHandler(options: InteractionHandlerOptions): PageHandler {
  const logger = options.logger ?? silentLogger;
  const base = `${options.pathPrefix}${INTERACTION_BASE}`;
  const assets = `${options.pathPrefix}${ASSETS_BASE}`;
  const services: SignInServices = {
    provider: options.provider,
    directory: options.directory,
    clients: options.clients,
    consents: options.consents,
    grantContexts: options.grantContexts,
    apiResource: options.apiResource,
    pathPrefix: options.pathPrefix,
    sessionCookieName: options.sessionCookie.name,
    tokens: options.tokens,
    refreshTokenLifetime: options.refreshTokenLifetime,
    signInLockout: options.signInLockout,
    trustProxy: options.trustProxy ?? false,
    clock: options.clock ?? systemClock,
    logger,
    base,
    assets,
    federation: () => options.federation?.current,
    ...(options.audit ? { audit: options.audit } : {}),
  };
  const baseSlash = `${base}/`;
  const assetsSlash = `${assets}/`;

  /** The pending interaction of the request's cookie; `undefined` when there is none (or it expired). */
  async function pending(exchange: ProviderExchange): Promise<InteractionDetails | undefined> {
    try {
      return await exchange.details(services.provider());
    } catch (error) {
      if (isDatabaseUnavailable(error)) throw error;
      logger.info('sign-in page for an unknown or expired interaction', { error });
      return undefined;
    }
  }

  return async function interactionPages(request) {
    const path = request.url.pathname;
    if (path.startsWith(assetsSlash)) {
      if (request.method !== 'GET' && request.method !== 'HEAD') return undefined;
      return signInAsset(request.method, path.slice(assets.length));
    }
    if (!path.startsWith(baseSlash)) return undefined;
    const [uid = '', action = '', ...rest] = path.slice(baseSlash.length).split('/');
    if (!INTERACTION_ID.test(uid) || rest.length > 0) return undefined;
    const exchange = new ProviderExchange(request);
    let formTargets = NO_TARGETS;
    try {
      if (!safeParams(request.url.search)) return signInErrorPages.unreadable(assets, NO_TARGETS);
      const details = await pending(exchange);
      if (!details || details.uid !== uid) return exchange.respond(signInErrorPages.expired(assets, NO_TARGETS));
      const interaction = new Interaction(services, request, exchange, details);
      formTargets = interaction.formTargets;
      return exchange.respond(await dispatch(interaction, action));
    } catch (error) {
      logger.error('sign-in page failed', { error });
      const page = isDatabaseUnavailable(error)
        ? signInErrorPages.unavailable(assets, formTargets)
        : signInErrorPages.failed(assets, formTargets);
      return exchange.respond(page);
    }
  };
}
