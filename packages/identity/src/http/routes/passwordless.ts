import { defineRoute, json, type LightResponse, type Route, type RouteContext } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import {
  CodeRequestInput,
  CodeVerifyInput,
  MagicLinkRequestInput,
  type PasswordlessService,
  type PasswordlessSignIn,
} from '../../passwordless/service.js';
import type { SessionService } from '../../sessions/service.js';
import { prefersHtml, resultPage } from '../pages.js';

const Accepted = z.object({ succeeded: z.literal(true) });
const SignedIn = z.object({ succeeded: z.literal(true), userId: z.uuid(), sessionId: z.uuid() });
const MagicLinkToken = z.object({ token: z.string().min(1).max(512).meta({ description: 'The token of the mailed link.' }) });

/**
 * Whether a form post comes from this site: a browser names the page's origin
 * in `Origin` (or says `Sec-Fetch-Site: same-origin`). Without either header
 * the caller is not a browser, which another site cannot make post. Refusing
 * cross-site posts keeps another site from signing a visitor in to the
 * attacker's account with the attacker's link (login CSRF).
 */
function postedFromThisSite(ctx: RouteContext<unknown, unknown, unknown>): boolean {
  const origin = ctx.headers.get('origin');
  if (origin !== null) return origin === ctx.url.origin || origin === new URL(ctx.baseUrl).origin;
  const site = ctx.headers.get('sec-fetch-site');
  return site === null || site === 'same-origin' || site === 'none';
}

const REQUEST_NOTE =
  'Always answers 202 for a well-formed address, whether or not an account uses it; only active users get mail. Magic-link and code requests share one limit of 3 per address per 15 minutes (429 `RateLimit.Exceeded` with `Retry-After`).';

function accepted(): LightResponse {
  return json({ succeeded: true }, { status: 202, headers: { 'cache-control': 'no-store' } });
}

function sessionContext(ctx: RouteContext<unknown, unknown, unknown>) {
  const userAgent = ctx.headers.get('user-agent');
  return { ip: ctx.clientIp, ...(userAgent ? { userAgent } : {}) };
}

/**
 * Passwordless sign-in: `POST /v1/identity/auth/passwordless/magic-link`,
 * `GET .../magic-link/verify` (the page the mailed link opens: it consumes
 * nothing), `POST .../magic-link/verify`, `POST /v1/identity/auth/passwordless/code`
 * and `POST .../code/verify`. A verification starts a session and sets the
 * session cookie.
 */
export function createPasswordlessRoutes(passwordless: PasswordlessService, sessions: SessionService): Route[] {
  const signedIn = (result: PasswordlessSignIn): Record<string, string> => ({
    'set-cookie': sessions.sessionCookieHeader(result.cookieValue, result.session.expiresAt),
    'cache-control': 'no-store',
  });

  return [
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/passwordless/magic-link',
      operationId: 'requestMagicLink',
      summary: 'Mail a one-time sign-in link',
      description: `${REQUEST_NOTE} The link works once, for 15 minutes. \`returnTo\` must be a path on this site (one leading \`/\`).`,
      tags: ['Passwordless'],
      auth: 'anonymous',
      ratePolicy: 'auth',
      request: { body: MagicLinkRequestInput },
      responses: { 202: { description: 'Mailed when an active account uses the address', schema: Accepted } },
      handler: async ({ body }) => {
        await passwordless.requestMagicLink(body);
        return accepted();
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/identity/auth/passwordless/magic-link/verify',
      operationId: 'confirmMagicLink',
      summary: 'The page a mailed sign-in link opens',
      description:
        'A page with one button that posts the token to `POST .../magic-link/verify`. Opening the link signs nobody in and consumes nothing, so mail scanners and link previews that fetch it cannot use it up.',
      tags: ['Passwordless'],
      auth: 'anonymous',
      ratePolicy: 'auth',
      request: { query: MagicLinkToken },
      responses: { 200: { description: 'The confirmation page (text/html)' } },
      handler: (ctx) => {
        const page = resultPage({
          status: 200,
          title: 'Sign in',
          message: 'Continue to sign in with the link from your e-mail.',
          form: { action: ctx.url.pathname.replace(/\/+$/, ''), fields: { token: ctx.query.token }, button: 'Sign in' },
        });
        page.headers.set('cache-control', 'no-store');
        return page;
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/passwordless/magic-link/verify',
      operationId: 'verifyMagicLink',
      summary: 'Sign in with a mailed link',
      description:
        'Consumes the link (exactly one use wins), marks the address verified, starts a session and sets the session cookie. The body is the form of the confirmation page (`token`); a form posted from another site is refused (403 `Auth.Forbidden`). With a `returnTo` the answer is a 303 redirect there; a browser (`Accept: text/html`) gets a small page; otherwise JSON.',
      tags: ['Passwordless'],
      auth: 'anonymous',
      ratePolicy: 'auth',
      request: { body: MagicLinkToken, bodyKind: 'form' },
      problemCodes: ['Passwordless.InvalidToken', 'Auth.Forbidden'],
      responses: {
        200: {
          description: 'Signed in',
          schema: SignedIn,
          headers: { 'Set-Cookie': 'The session cookie (HttpOnly; Secure; SameSite=Lax; Path=/)' },
        },
        303: { description: 'Signed in; redirected to the link’s `returnTo`', headers: { Location: 'The return path' } },
        400: { description: 'The link is invalid, expired or used (`Passwordless.InvalidToken`)' },
        403: { description: 'The form was posted from another site (`Auth.Forbidden`)' },
      },
      handler: async (ctx) => {
        const asPage = prefersHtml(ctx);
        if (!postedFromThisSite(ctx)) {
          if (asPage) {
            return resultPage({
              status: 403,
              title: 'This sign-in link does not work here',
              message: 'Open the link from your e-mail and confirm on the page it shows.',
            });
          }
          throw new ProblemError('Auth.Forbidden', 'Sign-in links are confirmed from this site only.');
        }
        let result: PasswordlessSignIn;
        try {
          result = await passwordless.verifyMagicLink(ctx.body.token, sessionContext(ctx));
        } catch (error) {
          if (asPage && error instanceof ProblemError && error.code === 'Passwordless.InvalidToken') {
            return resultPage({
              status: 400,
              title: 'This sign-in link does not work',
              message: 'Sign-in links work once, for 15 minutes. Request a new one.',
            });
          }
          throw error;
        }
        if (result.returnTo) {
          return new Response(null, { status: 303, headers: { location: result.returnTo, ...signedIn(result) } });
        }
        if (asPage) {
          const page = resultPage({ status: 200, title: 'You are signed in', message: 'You can close this page.' });
          for (const [name, value] of Object.entries(signedIn(result))) page.headers.set(name, value);
          return page;
        }
        return json({ succeeded: true, userId: result.userId, sessionId: result.session.id }, { headers: signedIn(result) });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/passwordless/code',
      operationId: 'requestSignInCode',
      summary: 'Mail a one-time sign-in code',
      description: `${REQUEST_NOTE} The 6-digit code works once, for 10 minutes, with at most 5 attempts; a new code replaces the previous one.`,
      tags: ['Passwordless'],
      auth: 'anonymous',
      ratePolicy: 'auth',
      request: { body: CodeRequestInput },
      responses: { 202: { description: 'Mailed when an active account uses the address', schema: Accepted } },
      handler: async ({ body }) => {
        await passwordless.requestCode(body);
        return accepted();
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/passwordless/code/verify',
      operationId: 'verifySignInCode',
      summary: 'Sign in with a mailed code',
      description:
        'Consumes the code (exactly one use wins), marks the address verified, starts a session and sets the session cookie. An unknown address, a wrong, expired, used or dead code all answer the same 400.',
      tags: ['Passwordless'],
      auth: 'anonymous',
      ratePolicy: 'auth',
      request: { body: CodeVerifyInput },
      problemCodes: ['Passwordless.InvalidCode'],
      responses: {
        200: {
          description: 'Signed in',
          schema: SignedIn,
          headers: { 'Set-Cookie': 'The session cookie (HttpOnly; Secure; SameSite=Lax; Path=/)' },
        },
        400: { description: 'The code does not work (`Passwordless.InvalidCode`), or the body is invalid' },
      },
      handler: async (ctx) => {
        const result = await passwordless.verifyCode(ctx.body, sessionContext(ctx));
        return json({ succeeded: true, userId: result.userId, sessionId: result.session.id }, { headers: signedIn(result) });
      },
    }),
  ];
}
