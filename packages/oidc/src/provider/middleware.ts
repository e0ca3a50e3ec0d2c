import type { AuditRequestFacts, Logger } from '@idt/core';
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable, markup } from '@idt/core';
import { traceIdFromTraceparent } from '@idt/problem';
import type Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { LogoutPages } from '../interactions/logout-pages.js';
import { renderPage, renderUnavailablePage } from '../interactions/pages.js';
import { type FrontchannelTarget, renderFrontchannelPage } from '../logout/frontchannel.js';
import type { AccessTokenIntrospection } from '../policy/access-token-introspection.js';
import type { ClientLockout } from '../policy/client-lockout.js';
import { applyPageSecurityHeaders } from '../policy/security-headers.js';
import { unauthorizedClient } from '../policy/unauthorized-client.js';
import { basicClientId } from './basic-auth.js';
import { OIDC_ROUTES, USERINFO_PATH } from './create-provider.js';
import { installContextRelease } from './release-context.js';

/** What a logout ended, for the rest of idt. */
export interface EndedSession {
  readonly userId: string;
  /** The identity session id (the `sid` of every token of the session). */
  readonly sessionId: string;
  readonly clientIds: readonly string[];
  /** The grants of the session: ended too, offline access included (SPEC 3.2). */
  readonly grantIds: readonly string[];
  /** The client whose end-session request it was, when the provider knew it (the audit record's trail). */
  readonly clientId?: string;
  /** Where the logout request came from, for the audit record. */
  readonly request?: AuditRequestFacts;
}

/** Options of {@link installProviderMiddleware}. */
export interface ProviderMiddlewareOptions {
  readonly lockout: ClientLockout;
  /**
   * Writes what the storage adapter left pending for a request (a consumed
   * code or refresh token that no other write carried); awaited before the
   * request's answer leaves.
   */
  readonly settle?: (request: object) => Promise<void>;
  /** Ends the identity session and notifies back-channel clients; returns the front-channel targets. */
  readonly onLogout: (ended: EndedSession) => Promise<readonly FrontchannelTarget[]>;
  /** Where the sign-in pages load their assets (prefix included). */
  readonly assets: string;
  /** Renders the logout request of a browser without a session. */
  readonly logoutPages: Pick<LogoutPages, 'withoutSession'>;
  /**
   * Introspects one of idt's JWT access tokens for the authenticated client
   * (`createAccessTokenIntrospection`). Without it, oidc-provider's
   * `unsupported_token_type` answer stands.
   */
  readonly introspectAccessToken?: (client: { readonly clientId: string }, token: string) => Promise<AccessTokenIntrospection>;
  readonly logger: Logger;
}

const CLIENT_AUTH_ROUTES = new Set(['token', 'revocation', 'introspection', 'pushed_authorization_request']);

/** The `ctx.state` flag of an introspection request whose JWT oidc-provider refused, after authenticating the client. */
const STRUCTURED_TOKEN = 'idtStructuredToken';

/**
 * The caching headers of every answer of the client-authenticated endpoints:
 * `Cache-Control: no-store` and `Pragma: no-cache` (RFC 6749 5.1, for the
 * HTTP/1.0 caches the token response must not be kept by either).
 */
export const NO_STORE_HEADERS = { 'cache-control': 'no-store', pragma: 'no-cache' } as const;

/**
 * Runs the rest of the request, then writes what the storage adapter left
 * pending for it, so that the answer leaves only once they are stored; a
 * failure to store them fails the request (a database outage answers 503).
 * When the request failed, they are still written, and a failure to write
 * them is logged beside the request's own error.
 */
async function runSettled(
  ctx: object,
  next: () => Promise<unknown>,
  settle: ((request: object) => Promise<void>) | undefined,
  logger: Logger,
): Promise<void> {
  if (!settle) {
    await next();
    return;
  }
  try {
    await next();
  } catch (error) {
    await settle(ctx).catch((settleError: unknown) =>
      logger.error('storing a consumed code or refresh token failed', { error: settleError }),
    );
    throw error;
  }
  await settle(ctx);
}

/**
 * Pre- and post-middleware around oidc-provider's routes: the discovery
 * document's logout flags and userinfo endpoint, refusal of response modes
 * other than `query`, the answers of the client-authenticated endpoints
 * (`no-store` and `Pragma: no-cache`, introspection of JWT access tokens,
 * `unauthorized_client`), invalid-client auditing and lockout, and the
 * logout aftermath (identity session end, back- and front-channel
 * notification).
 */
export function installProviderMiddleware(provider: Provider, options: ProviderMiddlewareOptions): void {
  const { lockout, logger } = options;
  const authorizationPath = OIDC_ROUTES.authorization;
  // First, so that it lets a request's objects go after every other middleware is done with them.
  installContextRelease(provider);

  // A database outage is temporary: 503 with Retry-After rather than oidc-provider's 500 server_error.
  provider.on('server_error', (ctx: { state: Record<string, unknown> }, error: unknown) => {
    ctx.state.serverError = error;
  });
  // oidc-provider refuses every JWT at introspection (it only knows the tokens it stores), once the client is
  // authenticated; idt answers its own access tokens in its place (below). patches.test.ts checks that order.
  provider.on('introspection.error', (ctx: { state: Record<string, unknown> }, error: unknown) => {
    if ((error as { error?: unknown }).error === 'unsupported_token_type') ctx.state[STRUCTURED_TOKEN] = true;
  });
  provider.use(async (ctx, next) => {
    try {
      await runSettled(ctx, next, options.settle, logger);
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      ctx.state.serverError = error;
      ctx.status = 500;
    }
    if (!isDatabaseUnavailable(ctx.state.serverError)) return;
    const location = ctx.response.get('location');
    if (ctx.status >= 300 && ctx.status < 400 && location) {
      // An authorization error on its way back to the client: RFC 6749's own code for this.
      const url = new URL(location);
      if (url.searchParams.get('error') === 'server_error') url.searchParams.set('error', 'temporarily_unavailable');
      url.searchParams.delete('error_description');
      ctx.set('location', url.href);
      return;
    }
    const html = ctx.response.is('html') || (typeof ctx.body !== 'object' && ctx.accepts('json', 'html') === 'html');
    ctx.status = 503;
    ctx.set('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
    ctx.set(NO_STORE_HEADERS);
    if (html) {
      ctx.type = 'html';
      applyPageSecurityHeaders(ctx);
      ctx.body = renderUnavailablePage(options.assets);
    } else {
      ctx.body = {
        error: 'temporarily_unavailable',
        error_description: 'The service is temporarily unavailable; retry shortly.',
      };
    }
  });

  provider.use(async (ctx, next) => {
    // Codes return only in the query of a top-level redirect (SPEC 4.3): no form_post, no fragment.
    if (ctx.path.endsWith(authorizationPath) && ctx.method === 'GET') {
      const mode = ctx.query.response_mode;
      if (mode !== undefined && mode !== 'query') {
        ctx.status = 400;
        ctx.type = 'html';
        applyPageSecurityHeaders(ctx);
        ctx.body = renderPage(
          { title: 'Sign-in problem', assets: options.assets },
          markup`<h1>Sign-in problem</h1><p>The response mode ${String(mode)} is not supported; codes are returned in the query only.</p><p class="hint">Error code: <code>invalid_request</code></p>`,
        );
        return;
      }
    }

    const oidc = ctx as unknown as KoaContextWithOIDC;
    await next();
    const route = oidc.oidc?.route;
    if (!route) return;

    if (route === 'discovery') {
      const body = ctx.body as Record<string, unknown>;
      body.response_modes_supported = ['query'];
      body.userinfo_endpoint = new URL(`.${USERINFO_PATH}`, `${oidc.oidc.issuer}/`).href;
      body.frontchannel_logout_supported = true;
      body.frontchannel_logout_session_supported = true;
      body.backchannel_logout_supported = true;
      body.backchannel_logout_session_supported = true;
      body.grant_types_supported = ['authorization_code', 'refresh_token', 'client_credentials'];
      // Introspection and revocation authenticate clients as the token endpoint does (RFC 8414 section 2:
      // without these members a client may assume client_secret_basic alone).
      body.introspection_endpoint_auth_methods_supported = body.token_endpoint_auth_methods_supported;
      body.revocation_endpoint_auth_methods_supported = body.token_endpoint_auth_methods_supported;
      return;
    }

    if (CLIENT_AUTH_ROUTES.has(route)) {
      ctx.set(NO_STORE_HEADERS);
      const authenticated = (oidc.oidc.entities as { Client?: { clientId: string } }).Client;
      const token = oidc.oidc.params?.token;
      if (
        route === 'introspection' &&
        ctx.state[STRUCTURED_TOKEN] === true &&
        options.introspectAccessToken &&
        authenticated &&
        typeof token === 'string'
      ) {
        // The token is JWT-shaped (maybe ours): the answer is the API's bearer check's, whatever the hint.
        ctx.status = 200;
        ctx.body = await options.introspectAccessToken(authenticated, token);
      } else if (ctx.status === 400 && (route === 'token' || route === 'pushed_authorization_request')) {
        const refusal = unauthorizedClient(ctx.body, oidc.oidc.params?.grant_type);
        if (refusal) ctx.body = refusal;
      }
      const body = ctx.body as { error?: string; error_description?: string } | undefined;
      const clientId =
        authenticated?.clientId ??
        (oidc.oidc.params?.client_id as string | undefined) ??
        basicClientId(oidc.get('authorization'));
      if (ctx.status === 401 && body?.error === 'invalid_client') {
        if (clientId) {
          await lockout
            .recordFailure(clientId, { ip: ctx.ip, route, reason: body.error_description })
            .catch((error: unknown) => logger.error('recording an invalid-client answer failed', { error, clientId }));
        } else {
          logger.warn('invalid_client without a client id', { route, ip: ctx.ip });
        }
      } else if (clientId && ctx.status < 400) {
        // A promise only when the client failed recently and its count is reset.
        const recorded = lockout.recordSuccess(clientId);
        if (recorded) {
          await recorded.catch((error: unknown) => logger.error('resetting client failures failed', { error, clientId }));
        }
      }
      return;
    }

    if (route === 'end_session') {
      // Without a session oidc-provider answers a self-submitting page of its own (inline script, no CSP).
      const session = oidc.oidc.session as unknown as { accountId?: string } | undefined;
      if (!session?.accountId && ctx.status === 200 && ctx.response.is('html')) options.logoutPages.withoutSession(oidc);
      return;
    }

    if (route === 'end_session_confirm') {
      const session = oidc.oidc.session as unknown as {
        accountId?: string;
        authorizations?: Record<string, { sid?: string; grantId?: string }>;
        destroyed?: boolean;
      };
      const authorizations = session?.authorizations ?? {};
      const sid = Object.values(authorizations).find((entry) => entry?.sid)?.sid;
      if (!session?.destroyed || !session.accountId || !sid) return;
      const grantIds = Object.values(authorizations)
        .map((entry) => entry?.grantId)
        .filter((grantId): grantId is string => typeof grantId === 'string');
      const clientId = (oidc.oidc.client as { clientId?: string } | undefined)?.clientId;
      const targets = await options.onLogout({
        userId: session.accountId,
        sessionId: sid,
        clientIds: Object.keys(authorizations),
        grantIds,
        ...(clientId ? { clientId } : {}),
        request: {
          ip: ctx.ip || null,
          userAgent: ctx.get('user-agent') || null,
          traceId: traceIdFromTraceparent(ctx.get('traceparent') || null) ?? null,
        },
      });
      const location = ctx.response.get('location');
      if (targets.length > 0 && location && ctx.status >= 300 && ctx.status < 400) {
        const page = renderFrontchannelPage({
          assets: options.assets,
          issuer: oidc.oidc.issuer,
          sid,
          targets,
          continueTo: location,
        });
        ctx.status = 200;
        ctx.remove('location');
        ctx.type = 'html';
        for (const [name, value] of Object.entries(page.headers)) ctx.set(name, value);
        ctx.body = page.html;
      }
    }
  });
}
