import { auditRequestOf, defineRoute, json, type LightResponse, type Route } from '@idt/core';
import { renderProblem, UnauthorizedError } from '@idt/problem';
import { z } from 'zod';
import { PasswordRejectedError } from '../../password-policy/policy.js';
import {
  ChangePasswordInput,
  type PasswordChangeService,
  PasswordResetConfirmInput,
  PasswordResetRequestInput,
  type PasswordResetService,
} from '../../password-reset/service.js';

const Accepted = z.object({ succeeded: z.literal(true) });

/**
 * The `Identity.PasswordRejected` problem with the policy's reasons: in
 * `reasons`, and as the field errors of `field` (as a validation problem
 * lists them).
 */
function rejected(error: PasswordRejectedError, traceId: string, field: string): LightResponse {
  const { status, headers, body } = renderProblem(error, { environment: 'Production', traceId });
  return json(
    { ...body, errors: { [field]: [...error.reasons] }, reasons: [...error.reasons] },
    { status, headers: { ...headers, 'cache-control': 'no-store' } },
  );
}

const NO_CONTENT = () => new Response(null, { status: 204, headers: { 'cache-control': 'no-store' } });

/**
 * The forgotten-password and password-change routes:
 * `POST /v1/identity/auth/password-reset`, `POST
 * /v1/identity/auth/password-reset/confirm` and `POST
 * /v1/identity/auth/change-password`.
 */
export function createPasswordRoutes(reset: PasswordResetService, change: PasswordChangeService): Route[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/password-reset',
      operationId: 'requestPasswordReset',
      summary: 'Mail a password reset link',
      description:
        'Always answers 202 for a well-formed address, with the same body and in about the same time whether or not an account uses it; only active accounts get mail, with a single-use link to the reset page (`/connect/password-reset`) that works for one hour. A new request replaces the earlier link. Limited to 3 requests per address and `IDT_PASSWORD_RESET_IP_MAX_REQUESTS` (20) per client address per 15 minutes (429 `RateLimit.Exceeded` with `Retry-After`). A deployment without a module that mails the link (`@idt/notifications`) answers 503 `PasswordReset.Unavailable`.',
      tags: ['Passwords'],
      auth: 'anonymous',
      ratePolicy: 'auth',
      request: { body: PasswordResetRequestInput },
      problemCodes: ['PasswordReset.Unavailable'],
      responses: {
        202: { description: 'Mailed when an active account uses the address', schema: Accepted },
        429: { description: 'Too many requests', headers: { 'Retry-After': 'Seconds until the window ends' } },
      },
      handler: async (ctx) => {
        await reset.request(ctx.body, { ip: ctx.clientIp });
        return json({ succeeded: true }, { status: 202, headers: { 'cache-control': 'no-store' } });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/password-reset/confirm',
      operationId: 'confirmPasswordReset',
      summary: 'Set a new password with a reset link',
      description:
        'Uses the link (exactly one use wins) and sets the new password, which the password policy judges first: a refused password answers 422 `Identity.PasswordRejected` with the `reasons` and leaves the link usable. On success every session, refresh-token family and access token of the user ends, the address is marked verified, `UserPasswordResetEvent` is published and the address gets a security notice.',
      tags: ['Passwords'],
      auth: 'anonymous',
      ratePolicy: 'auth',
      request: { body: PasswordResetConfirmInput },
      problemCodes: ['PasswordReset.InvalidToken', 'PasswordReset.TokenExpired', 'Identity.PasswordRejected'],
      responses: {
        204: { description: 'The password is set; every session of the user ended' },
        400: { description: 'The link is invalid or used (`PasswordReset.InvalidToken`), expired, or the body is invalid' },
        422: { description: 'The password policy refused the password (`Identity.PasswordRejected`, with `reasons`)' },
      },
      handler: async (ctx) => {
        try {
          await reset.confirm(ctx.body, auditRequestOf(ctx));
        } catch (error) {
          if (error instanceof PasswordRejectedError) return rejected(error, ctx.traceId, 'newPassword');
          throw error;
        }
        return NO_CONTENT();
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/change-password',
      operationId: 'changePassword',
      summary: 'Change your password',
      description:
        'Needs a signed-in user (a bearer token or the session cookie) and the current password. The password policy judges the new one (422 `Identity.PasswordRejected` with the `reasons`). Every other session of the user ends with its tokens (the one the request came with stays), outstanding reset links stop working, `UserPasswordChangedEvent` is published and the address gets a security notice. 5 attempts per user per 15 minutes.',
      tags: ['Passwords'],
      tenant: 'optional',
      request: { body: ChangePasswordInput },
      problemCodes: ['PasswordChange.WrongPassword', 'Identity.PasswordRejected'],
      responses: {
        204: { description: 'The password is changed; the other sessions ended' },
        400: { description: 'The current password is wrong (`PasswordChange.WrongPassword`), or the body is invalid' },
        422: { description: 'The password policy refused the new password (`Identity.PasswordRejected`, with `reasons`)' },
        429: { description: 'Too many attempts', headers: { 'Retry-After': 'Seconds until the window ends' } },
      },
      handler: async (ctx) => {
        const { principal } = ctx;
        if (principal?.kind !== 'user' || !principal.userId) {
          throw new UnauthorizedError('Changing the password needs a signed-in user.');
        }
        try {
          await change.change(principal.userId, ctx.body, { sessionId: principal.sessionId, ...auditRequestOf(ctx) });
        } catch (error) {
          if (error instanceof PasswordRejectedError) return rejected(error, ctx.traceId, 'newPassword');
          throw error;
        }
        return NO_CONTENT();
      },
    }),
  ];
}
