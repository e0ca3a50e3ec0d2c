import { type Clock, constantTimeEqual, escapeHtml, isUuid, type Logger, readBodyText } from '@idt/core';
import * as oidc from 'openid-client';
import type { BffConfig } from '../config.js';
import type { BffCookies, LoginTransaction } from '../cookies/jar.js';
import type { CurrentSession } from '../sessions/current.js';
import { type BffSessionService, userFromClaims } from '../sessions/sessions.js';
import type { BffSessionStore } from '../sessions/store.js';
import { verifyLogoutToken } from './backchannel.js';
import { methodNotAllowed, noStoreJson, problemResponse, responseHeaders } from './http.js';
import { CodeExchangeRefusedError, type ProviderClient } from './provider.js';
import { safeReturnTo, withAuthorizationError } from './return-to.js';

/** The `prompt` values `/bff/login` passes on; others are dropped. */
export const LOGIN_PROMPTS: readonly string[] = Object.freeze(['none', 'login', 'consent', 'select_account']);

/** The largest back-channel logout request body read: a logout token is a few hundred bytes. */
const MAX_LOGOUT_BODY_BYTES = 64 * 1024;

/** What the routes work with. */
export interface AuthRoutesContext {
  readonly config: BffConfig;
  readonly provider: ProviderClient;
  readonly sessions: BffSessionService;
  readonly store: BffSessionStore;
  readonly cookies: BffCookies;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Keeps a background task (best-effort token revocation) for `close()` to wait on. */
  readonly track: (task: Promise<unknown>) => void;
}

/** A Fetch handler of one BFF route. */
export type BffRouteHandler = (request: Request) => Promise<Response>;

/**
 * The sign-in and session routes under `/bff` (SPEC 4.3, 5.4; SPEC-NOTES "BFF"):
 * `login`, `callback`, `user`, `logout`, `frontchannel-logout` and
 * `backchannel-logout`, keyed by path.
 */
export function createAuthRoutes(context: AuthRoutesContext): Record<string, BffRouteHandler> {
  const { config, provider, sessions, store, cookies, clock, logger } = context;

  const invalidTransaction = (request: Request, detail: string, state: string | null = null) =>
    problemResponse(request, 'Bff.LoginTransactionInvalid', { detail, setCookie: cookies.clearTransaction(state) });

  const sessionProblem = (request: Request, current: Extract<CurrentSession, { session: null }>) =>
    problemResponse(request, current.code, { setCookie: current.setCookie });

  /** `GET /bff/login?returnTo=&organization=&prompt=`: 302 to the authorization endpoint with a fresh login transaction. */
  async function login(request: Request): Promise<Response> {
    if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed(request, 'GET');
    const params = new URL(request.url).searchParams;
    const organization = params.get('organization')?.trim();
    const prompt = params.get('prompt')?.trim();
    const transaction: LoginTransaction = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      codeVerifier: oidc.randomPKCECodeVerifier(),
      returnTo: safeReturnTo(params.get('returnTo')),
      ...(organization && isUuid(organization) ? { organization } : {}),
    };
    const location = await provider.authorizationUrl(transaction, {
      organization: transaction.organization,
      prompt: prompt && LOGIN_PROMPTS.includes(prompt) ? prompt : undefined,
    });
    return new Response(null, {
      status: 302,
      headers: responseHeaders({ location: location.href, 'cache-control': 'no-store' }, [
        ...(await cookies.transactionCookie(transaction, request.headers)),
      ]),
    });
  }

  /** `GET /bff/callback`: completes the sign-in, creates the session, 302 to the return path. */
  async function callback(request: Request): Promise<Response> {
    if (request.method !== 'GET') {
      return invalidTransaction(
        request,
        'The sign-in response must come back as a top-level GET redirect; form_post is not supported.',
      );
    }
    const destination = request.headers.get('sec-fetch-dest');
    if (destination !== null && destination !== 'document') {
      return invalidTransaction(request, 'The sign-in response must load as a top-level page, not in a frame or by script.');
    }
    const params = new URL(request.url).searchParams;
    const state = params.get('state');
    // Each sign-in in progress has its own transaction cookie, named by its state.
    const transaction = await cookies.readTransaction(request.headers, state);
    if (!transaction) {
      return invalidTransaction(
        request,
        'The sign-in transaction is missing or older than 10 minutes; start again at /bff/login.',
        state,
      );
    }
    if (!state || !constantTimeEqual(state, transaction.state)) {
      return invalidTransaction(
        request,
        'The sign-in response does not match this browser’s sign-in; start again at /bff/login.',
        state,
      );
    }
    const error = params.get('error');
    if (error) {
      return new Response(null, {
        status: 302,
        headers: responseHeaders(
          {
            location: withAuthorizationError(transaction.returnTo, error, params.get('error_description')),
            'cache-control': 'no-store',
          },
          cookies.clearTransaction(state),
        ),
      });
    }
    let exchange: Awaited<ReturnType<ProviderClient['exchangeCode']>>;
    try {
      exchange = await provider.exchangeCode(params, transaction);
    } catch (failure) {
      if (failure instanceof CodeExchangeRefusedError) {
        logger.info('bff.callback.exchange_refused', { reason: failure.message });
        return invalidTransaction(request, 'The sign-in could not be completed; start again at /bff/login.', state);
      }
      logger.warn('bff.callback.provider_unavailable', { reason: (failure as Error).message });
      return problemResponse(request, 'Bff.UpstreamUnavailable', { setCookie: cookies.clearTransaction(state) });
    }
    // A session this browser held before is replaced, not left behind.
    const previous = await sessions.peek(request.headers);
    if (previous.session) await sessions.destroy(previous.session.id);
    const sid = exchange.claims.sid;
    const { setCookie } = await sessions.create({
      user: userFromClaims(exchange.claims),
      sid: typeof sid === 'string' && sid !== '' ? sid : null,
      accessToken: exchange.accessToken,
      expiresInSeconds: exchange.expiresInSeconds,
      refreshToken: exchange.refreshToken,
      idToken: exchange.idToken,
    });
    return new Response(null, {
      status: 302,
      headers: responseHeaders({ location: transaction.returnTo, 'cache-control': 'no-store' }, [
        setCookie,
        ...cookies.clearTransaction(state),
      ]),
    });
  }

  /** `GET /bff/user`: the signed-in user and the CSRF token; never a token of the provider. */
  async function user(request: Request): Promise<Response> {
    if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed(request, 'GET');
    const current = await sessions.current(request.headers);
    if (!current.session) return sessionProblem(request, current);
    const { session } = current;
    return noStoreJson(
      {
        sub: session.user.sub,
        name: session.user.name,
        email: session.user.email,
        orgId: session.user.orgId,
        orgName: session.user.orgName,
        roles: session.user.roles,
        sid: session.sid,
        sessionExpiresAt: new Date(session.expiresAt).toISOString(),
        csrfToken: session.csrfToken,
      },
      200,
      current.setCookie,
    );
  }

  /** `POST /bff/logout` (header `x-csrf-token`): ends the session; 200 `{logoutUrl}` for the page to navigate to. */
  async function logout(request: Request): Promise<Response> {
    if (request.method !== 'POST') return methodNotAllowed(request, 'POST');
    const current = await sessions.peek(request.headers);
    if (!current.session) {
      return new Response(null, {
        status: 204,
        headers: responseHeaders({ 'cache-control': 'no-store' }, sessions.clearCookies()),
      });
    }
    const { session } = current;
    if (!sessions.csrfMatches(session, request.headers.get('x-csrf-token'))) {
      return problemResponse(request, 'Bff.CsrfInvalid');
    }
    await sessions.destroy(session.id);
    if (session.refreshToken) {
      const refreshToken = session.refreshToken;
      context.track(
        provider.revokeRefreshToken(refreshToken).catch((error: unknown) => {
          logger.warn('bff.logout.revocation_failed', { reason: (error as Error).message });
        }),
      );
    }
    const logoutUrl = provider.endSessionUrl(session.idToken) ?? config.postLogoutRedirectUri ?? '/';
    return noStoreJson({ logoutUrl }, 200, sessions.clearCookies());
  }

  /**
   * `GET /bff/frontchannel-logout?iss=&sid=`: loaded by the provider's
   * logout page in a hidden frame. Ends the sessions of `sid` when `iss` is
   * the configured issuer; always 200 with a tiny page.
   */
  async function frontchannelLogout(request: Request): Promise<Response> {
    if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed(request, 'GET');
    const params = new URL(request.url).searchParams;
    const iss = params.get('iss');
    const sid = params.get('sid');
    if (iss === config.issuer && sid) {
      const ended = await store.revokeBySid(sid);
      logger.info('bff.frontchannel_logout', { ended });
    }
    return new Response('<!doctype html><html><head><meta charset="utf-8"><title>Signed out</title></head><body></body></html>', {
      status: 200,
      headers: {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        // Framed by the provider's logout page, by no one else.
        'content-security-policy': `default-src 'none'; frame-ancestors ${escapeHtml(new URL(config.issuer).origin)}`,
        'x-content-type-options': 'nosniff',
      },
    });
  }

  /** `POST /bff/backchannel-logout` (form `logout_token`): ends the sessions the verified token names. */
  async function backchannelLogout(request: Request): Promise<Response> {
    if (request.method !== 'POST') return methodNotAllowed(request, 'POST');
    const invalid = () =>
      new Response(JSON.stringify({ error: 'invalid_request' }), {
        status: 400,
        headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
      });
    let target: Awaited<ReturnType<typeof verifyLogoutToken>>;
    try {
      const type = (request.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase();
      if (type !== 'application/x-www-form-urlencoded') return invalid();
      const form = new URLSearchParams(await readBodyText(request, MAX_LOGOUT_BODY_BYTES));
      const tokens = form.getAll('logout_token');
      if (tokens.length !== 1 || !tokens[0]) return invalid();
      target = await verifyLogoutToken(tokens[0], {
        jwks: provider.jwks,
        issuer: provider.issuer,
        clientId: config.clientId,
        now: clock.now(),
      });
    } catch (error) {
      logger.info('bff.backchannel_logout.refused', { reason: (error as Error).message });
      return invalid();
    }
    const ended = target.sid ? await store.revokeBySid(target.sid) : await store.revokeBySubject(target.sub as string);
    logger.info('bff.backchannel_logout', { ended });
    return new Response(null, { status: 200, headers: { 'cache-control': 'no-store' } });
  }

  return {
    '/bff/login': login,
    '/bff/callback': callback,
    '/bff/user': user,
    '/bff/logout': logout,
    '/bff/frontchannel-logout': frontchannelLogout,
    '/bff/backchannel-logout': backchannelLogout,
  };
}
