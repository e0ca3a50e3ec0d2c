import { auditRequestOf, defineRoute, json, type LightResponse, type Route } from '@idt/core';
import { ProblemError, UnauthorizedError } from '@idt/problem';
import { z } from 'zod';
import { accountAuditContextOf } from '../../audit/account-actions.js';
import { ChangeEmailInput, ConfirmEmailChangeInput, type EmailChangeService } from '../../email-change/service.js';
import { prefersHtml, resultPage } from '../pages.js';

/** The short result body of the e-mail change endpoints (SPEC 4.5). */
export const EmailChangeResult = z.object({
  succeeded: z.boolean(),
  error: z
    .enum(['same_email', 'rate_limited', 'unauthorized', 'token_expired', 'invalid_token'])
    .optional()
    .meta({ description: 'Why the request failed; absent on success.' }),
});

type ShortError = 'same_email' | 'rate_limited' | 'unauthorized' | 'token_expired' | 'invalid_token';

function shortBody(status: number, error?: ShortError): LightResponse {
  return json(error ? { succeeded: false, error } : { succeeded: true }, { status, headers: { 'cache-control': 'no-store' } });
}

const CONFIRM_ERRORS: Record<string, { error: ShortError; title: string; message: string }> = {
  'EmailChange.TokenExpired': {
    error: 'token_expired',
    title: 'This link has expired',
    message: 'Confirmation links work for 24 hours. Request the change again to get a new link.',
  },
  'EmailChange.InvalidToken': {
    error: 'invalid_token',
    title: 'This link does not work',
    message: 'The link is invalid, was replaced by a newer one, or was already used.',
  },
};

/**
 * `POST /v1/identity/auth/change-email` and `GET
 * /v1/identity/auth/confirm-email-change` (SPEC 4.5), which answer with the
 * short bodies `{ succeeded, error? }` instead of problem documents.
 */
export function createEmailChangeRoutes(emailChange: EmailChangeService): Route[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/change-email',
      operationId: 'changeEmail',
      summary: 'Ask to change your e-mail address; a confirmation link is mailed to the new one',
      description:
        'Needs a signed-in user: a bearer token or the session cookie (with an `Origin` of the sign-in site). Answers with short bodies: 400 `same_email`, 429 `rate_limited` (with `Retry-After`; the per-user limit is `IDT_EMAIL_CHANGE_MAX_REQUESTS` per `IDT_EMAIL_CHANGE_WINDOW_SECONDS`, anchored at the first request), 401 `unauthorized`. A malformed address is a 400 `Validation.Failed` problem; a deployment without a module that mails the confirmation (`@idt/notifications`) answers a 503 `EmailChange.Unavailable` problem. An address another account uses answers 200 as well, but changes nothing.',
      tags: ['E-mail change'],
      tenant: 'optional',
      request: { body: ChangeEmailInput },
      problemCodes: ['EmailChange.SameEmail', 'EmailChange.Unavailable'],
      responses: {
        200: { description: '`{ succeeded: true }`: the link is on its way', schema: EmailChangeResult },
        400: {
          description: '`{ succeeded: false, error: "same_email" }`, or a `Validation.Failed` problem',
          schema: EmailChangeResult,
        },
        401: { description: '`{ succeeded: false, error: "unauthorized" }`', schema: EmailChangeResult },
        429: {
          description: '`{ succeeded: false, error: "rate_limited" }`',
          schema: EmailChangeResult,
          headers: { 'Retry-After': 'Seconds until the window ends' },
        },
      },
      renderError: (problem: ProblemError) => {
        if (problem.code === 'Auth.Unauthenticated') return shortBody(401, 'unauthorized');
        if (problem.code === 'RateLimit.Exceeded') return shortBody(429, 'rate_limited');
        if (problem.code === 'EmailChange.SameEmail') return shortBody(400, 'same_email');
        return undefined;
      },
      handler: async (ctx) => {
        const { principal, body } = ctx;
        if (principal?.kind !== 'user' || !principal.userId) {
          throw new UnauthorizedError('Changing the e-mail address needs a signed-in user.');
        }
        await emailChange.request(principal.userId, body, accountAuditContextOf(ctx));
        return shortBody(200);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/identity/auth/confirm-email-change',
      operationId: 'confirmEmailChange',
      summary: 'Confirm a new e-mail address (the mailed link)',
      description:
        'The e-mail address and username become the new address; existing sessions stay valid. Answers with short bodies; a browser (`Accept: text/html`) gets a small page with the same status instead.',
      tags: ['E-mail change'],
      auth: 'anonymous',
      request: { query: ConfirmEmailChangeInput },
      problemCodes: ['EmailChange.TokenExpired', 'EmailChange.InvalidToken'],
      responses: {
        200: { description: '`{ succeeded: true }`', schema: EmailChangeResult },
        400: {
          description: '`{ succeeded: false, error: "token_expired" }` after 24 hours, else `error: "invalid_token"`',
          schema: EmailChangeResult,
        },
      },
      renderError: (problem: ProblemError) =>
        problem.code === 'Validation.Failed' ? shortBody(400, 'invalid_token') : undefined,
      handler: async (ctx) => {
        const { query, headers } = ctx;
        const asPage = prefersHtml({ headers });
        try {
          await emailChange.confirm(query, auditRequestOf(ctx));
        } catch (error) {
          const known = error instanceof ProblemError ? CONFIRM_ERRORS[error.code] : undefined;
          if (!known) throw error;
          return asPage ? resultPage({ status: 400, title: known.title, message: known.message }) : shortBody(400, known.error);
        }
        return asPage
          ? resultPage({
              status: 200,
              title: 'Your e-mail address is changed',
              message: `You now sign in with ${query.newEmail.trim().toLowerCase()}.`,
            })
          : shortBody(200);
      },
    }),
  ];
}
