import { defineRoute, json, type Route } from '@idt/core';
import { UnauthorizedError } from '@idt/problem';
import { z } from 'zod';
import {
  ConfirmEmailVerificationInput,
  type EmailVerificationService,
  ResendVerificationInput,
} from '../../email-verification/service.js';

const Accepted = z.object({ succeeded: z.literal(true) });
const NO_STORE = { 'cache-control': 'no-store' };

/**
 * E-mail verification: `POST /v1/identity/auth/verify-email/resend` (a new
 * link) and `POST /v1/identity/auth/verify-email` (use a link's token, for
 * applications that show their own page; the mailed link opens
 * `/connect/verify-email`).
 */
export function createEmailVerificationRoutes(verification: EmailVerificationService): Route[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/verify-email/resend',
      operationId: 'resendEmailVerification',
      summary: 'Mail a new e-mail verification link',
      description:
        'Without a body (or `{}`), for the signed-in user: 202 once the link is on its way, 409 `EmailVerification.AlreadyVerified` when the address is verified. With `{ "email": … }`, for anyone: always 202 for a well-formed address, whether or not an account uses it; only an active account whose address is not verified gets mail. The link works once, for 24 hours, and replaces the earlier one. Limited to 3 links per address per 15 minutes (429 `RateLimit.Exceeded` with `Retry-After`) besides the `auth` rate limit.',
      tags: ['Users'],
      auth: 'optional',
      tenant: 'optional',
      ratePolicy: 'auth',
      request: { body: ResendVerificationInput },
      problemCodes: ['EmailVerification.AlreadyVerified'],
      responses: {
        202: { description: 'A link is on its way (or, for an address, would be if it needed one)', schema: Accepted },
        401: { description: 'No address given and nobody signed in (`Auth.Unauthenticated`)' },
        409: { description: 'The signed-in user is verified already (`EmailVerification.AlreadyVerified`)' },
        429: { description: 'Too many links for the address', headers: { 'Retry-After': 'Seconds until the window ends' } },
      },
      handler: async ({ body, principal }) => {
        if (body?.email !== undefined) await verification.resendTo(body.email);
        else if (principal?.userId) await verification.resendForUser(principal.userId);
        else throw new UnauthorizedError('Sign in, or give the `email` to send a link to.');
        return json({ succeeded: true }, { status: 202, headers: NO_STORE });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/verify-email',
      operationId: 'confirmEmailVerification',
      summary: 'Verify an e-mail address with a mailed link’s token',
      description:
        'Uses the link (once): the account’s address becomes verified (`email_verified` in id tokens and userinfo) and `UserEmailVerifiedEvent` is published. A link stops working after 24 hours, when a newer link is sent, or when the account changes its address.',
      tags: ['Users'],
      auth: 'anonymous',
      ratePolicy: 'auth',
      request: { body: ConfirmEmailVerificationInput },
      problemCodes: ['EmailVerification.InvalidToken', 'EmailVerification.TokenExpired'],
      responses: {
        204: { description: 'The address is verified' },
        400: {
          description:
            'The link is invalid, replaced or used (`EmailVerification.InvalidToken`), or expired (`EmailVerification.TokenExpired`)',
        },
      },
      handler: async ({ body }) => {
        await verification.confirm(body.token);
        return new Response(null, { status: 204, headers: NO_STORE });
      },
    }),
  ];
}
