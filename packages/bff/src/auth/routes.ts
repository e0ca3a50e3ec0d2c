import { type Clock, constantTimeEqual, isUuid, type Logger, markup, readBodyText } from '@idt/core';
import * as oidc from 'openid-client';
import type { BffConfig } from '../config.js';
import { type BffCookies, LOGIN_TRANSACTION_TTL_SECONDS, type LoginTransaction } from '../cookies/jar.js';
import type { CurrentSession } from '../sessions/current.js';
import { type BffSessionService, userFromClaims } from '../sessions/sessions.js';
import type { BffSessionStore } from '../sessions/store.js';
import { verifyLogoutToken } from './backchannel.js';
import { methodNotAllowed, noStoreJson, problemResponse, responseHeaders } from './http.js';
import { createLoginStates } from './login-state.js';
import { CodeExchangeRefusedError, type ProviderClient } from './provider.js';
import { safeReturnTo, withAuthorizationError } from './return-to.js';

/** The `prompt` values `/bff/login` passes on; others are dropped. */
export const LOGIN_PROMPTS: readonly string[] = Object.freeze(['none', 'login', 'consent', 'select_account']);

/**
 * The query parameter `/bff/login` adds (the host the browser was on) when it
 * sends the browser to the redirect URI's host first; a login that carries it
 * is never sent on again, so a proxy that hides the public host cannot loop.
 */
export const LOGIN_FROM_HOST_PARAM = 'fromHost';

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
  const states = createLoginStates(config.cookie.keyring, clock);
  const home = new URL(config.redirectUri);
  let warnedHostUnseen = false;

  const invalidTransaction = (request: Request, detail: string, state: string | null = null) =>
    problemResponse(request, 'Bff.LoginTransactionInvalid', { detail, setCookie: cookies.clearTransaction(state) });

  const sessionProblem = (request: Request, current: Extract<CurrentSession, { session: null }>) =>
    problemResponse(request, current.code, { setCookie: current.setCookie });

  /** `GET /bff/login?returnTo=&organization=&prompt=`: 302 to the authorization endpoint with a fresh login transaction. */
  async function login(request: Request): Promise<Response> {
    if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed(request, 'GET');
    const url = new URL(request.url);
    const params = url.searchParams;
    // The transaction cookie belongs to the host it is set on, and the provider sends the browser back
    // to the redirect URI's host: a sign-in started on another host name (127.0.0.1 for localhost)
    // would find no cookie there. Such a login moves to the redirect URI's host first.
    if (url.hostname !== home.hostname) {
      if (!params.has(LOGIN_FROM_HOST_PARAM)) return loginOnHome(url);
      if (!warnedHostUnseen) {
        warnedHostUnseen = true;
        logger.warn('bff.login.host_unseen', {
          detail: `/bff/login was sent to ${home.origin} (the redirect URI's host) but arrives as ${url.origin}; behind a reverse proxy that rewrites Host, pass trustProxy: true so the BFF sees the public host`,
        });
      }
    }
    const organization = params.get('organization')?.trim();
    const prompt = params.get('prompt')?.trim();
    const transaction: LoginTransaction = {
      state: states.create(url.origin),
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
    if (!transaction) return missingTransaction(request, state);
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

  /** The same login on the redirect URI's host (302), with the host the browser was on. */
  function loginOnHome(url: URL): Response {
    // The configured origin and this route's fixed path: nothing of the request but its query.
    const target = new URL(`${home.origin}/bff/login`);
    target.search = url.search;
    target.searchParams.set(LOGIN_FROM_HOST_PARAM, url.host);
    return new Response(null, {
      status: 302,
      headers: responseHeaders({ location: target.href, 'cache-control': 'no-store' }),
    });
  }

  /**
   * A callback whose transaction cookie is gone or unusable: the state (which
   * names where and when the sign-in started) tells why, when this BFF
   * issued it: an expired sign-in, or one that started on another host name
   * and so left its cookie there.
   */
  function missingTransaction(request: Request, state: string | null): Response {
    const facts = state ? states.read(state) : undefined;
    if (!facts) {
      return invalidTransaction(
        request,
        'This browser has no sign-in in progress that matches this response (no transaction cookie, and a state this app did not issue); start again at /bff/login.',
        state,
      );
    }
    if (clock.now().getTime() - facts.issuedAt >= LOGIN_TRANSACTION_TTL_SECONDS * 1000) {
      return invalidTransaction(
        request,
        'The sign-in transaction is older than 10 minutes and has expired; start again at /bff/login.',
        state,
      );
    }
    const here = new URL(request.url);
    const started = new URL(facts.loginOrigin);
    if (started.hostname !== here.hostname) {
      return problemResponse(request, 'Bff.LoginHostMismatch', {
        detail: `The sign-in started on ${started.origin} but came back to ${here.origin}${here.hostname === home.hostname ? ', the host of the redirect URI' : ''}; the browser keeps the sign-in's cookie per host name, so it has none here. Open the app at ${home.origin} and sign in again.`,
        setCookie: cookies.clearTransaction(state),
      });
    }
    return invalidTransaction(
      request,
      `This browser holds no cookie for this sign-in: it was already completed (a reload or the back button), or the browser did not keep the cookie${config.cookie.secure && here.protocol === 'http:' ? ' (Safari keeps no Secure cookie on plain http: set COOKIE_SECURE=false there)' : ''}; start again at /bff/login.`,
      state,
    );
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
        // Framed by the provider's logout page, by no one else. The origin is escaped as it always was
        // (a host may hold & ' or "), so the header stays byte for byte what it was.
        'content-security-policy': `default-src 'none'; frame-ancestors ${markup`${new URL(config.issuer).origin}`}`,
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
