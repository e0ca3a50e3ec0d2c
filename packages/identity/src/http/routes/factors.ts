import { defineRoute, json, type Principal, type Route } from '@idt/core';
import { ProblemError, UnauthorizedError } from '@idt/problem';
import { z } from 'zod';
import { actorOf } from '../../accounts/actor.js';
import { accountAuditContextOf } from '../../audit/account-actions.js';
import { ReauthenticationInput, type RecentAuthentication } from '../../factors/recent-authentication.js';
import type { SecondFactorService } from '../../factors/service.js';
import { MemberParams } from './accounts-common.js';

/** `GET /v1/identity/account/factors`. */
export const SecondFactorsResponse = z.object({
  totp: z.boolean().meta({ description: 'Whether an authenticator app (TOTP) is set up.' }),
  recoveryCodesLeft: z.number().int().meta({ description: 'Unused recovery codes.' }),
  passkeys: z.number().int().meta({ description: 'Registered passkeys (0 when passkeys are not composed).' }),
});

const Reauthentication = { reauthentication: ReauthenticationInput.optional() };

/** `POST /v1/identity/account/factors/totp`. */
export const BeginTotpInput = z
  .strictObject({
    label: z
      .string()
      .max(254, 'A label has at most 254 characters.')
      .optional()
      .describe('How the account is named in the app; your e-mail address by default.'),
  })
  .optional();

const TotpEnrolmentResponse = z.object({
  enrolmentId: z.string().meta({ description: 'Confirm with it within 15 minutes.' }),
  secret: z.string().meta({ description: 'The Base32 secret, for typing into an app by hand. Shown once.' }),
  otpauthUri: z.string().meta({ description: '`otpauth://totp/...` (SHA-1, 6 digits, 30 s).' }),
  qrSvg: z.string().meta({ description: 'The URI as a QR code (an SVG document).' }),
});

/** `POST /v1/identity/account/factors/totp/confirm`. */
export const ConfirmTotpInput = z.strictObject({
  enrolmentId: z.string().min(1, 'Give the enrolment id.').max(64, 'Not an enrolment id.'),
  code: z.string().regex(/^\s*(?:\d\s*){6}$/, 'Enter the 6-digit code your app shows.'),
  ...Reauthentication,
});

/** The body of the account API's other changes: only the optional re-authentication. */
export const ReauthenticatedChangeInput = z.strictObject(Reauthentication).optional();

const RecoveryCodesResponse = z.object({
  recoveryCodes: z
    .array(z.string())
    .nullable()
    .meta({ description: 'Recovery codes, each usable once, shown only now (`null`: the unused set you had stays).' }),
});

const noStore = { 'cache-control': 'no-store' };

function userOf(principal: Principal | null): string {
  if (!principal) throw new UnauthorizedError('A valid credential is required.', { 'www-authenticate': 'Bearer' });
  if (principal.kind !== 'user' || !principal.userId) {
    throw new ProblemError('Auth.Forbidden', 'Second factors belong to users; sign in as one.');
  }
  return principal.userId;
}

const REAUTH_DOC =
  'Needs a recent authentication: the session (the cookie, or the `sid` of a bearer token) signed in within 5 minutes, or `reauthentication` in the body with your password or a code (403 `Identity.ReauthenticationRequired`).';
const REAUTH_CODES = ['Identity.ReauthenticationRequired', 'SecondFactor.Locked'];

/**
 * The account API of second factors: `GET /v1/identity/account/factors`,
 * `POST|DELETE /v1/identity/account/factors/totp`, `POST
 * /v1/identity/account/factors/totp/confirm`, `POST
 * /v1/identity/account/recovery-codes`, and the administrators' `DELETE
 * /v1/identity/organizations/{orgId}/members/{userId}/factors`.
 */
export function createSecondFactorRoutes(factors: SecondFactorService, recent: RecentAuthentication): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/identity/account/factors',
      operationId: 'listSecondFactors',
      summary: 'Your second factors',
      description: 'Whether an authenticator app is set up, how many recovery codes are unused, and how many passkeys you have.',
      tags: ['Account security'],
      tenant: 'optional',
      responses: { 200: { description: 'Your second factors', schema: SecondFactorsResponse } },
      handler: async ({ principal }) => {
        const userId = userOf(principal);
        return json(await factors.status(userId), { headers: noStore });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/account/factors/totp',
      operationId: 'beginTotpEnrolment',
      summary: 'Start setting up an authenticator app',
      description:
        'Answers a new secret (sealed at rest until confirmed), its `otpauth://` URI and QR code. Nothing changes until `POST /v1/identity/account/factors/totp/confirm` with a first code, within 15 minutes; a newer start ends an older one.',
      tags: ['Account security'],
      tenant: 'optional',
      request: { body: BeginTotpInput },
      responses: { 201: { description: 'Scan the QR code, then confirm with a code', schema: TotpEnrolmentResponse } },
      handler: async ({ principal, body }) => {
        const started = await factors.beginTotp(userOf(principal), body?.label ?? '');
        return json(started, { status: 201, headers: noStore });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/account/factors/totp/confirm',
      operationId: 'confirmTotpEnrolment',
      summary: 'Finish setting up an authenticator app with a first code',
      description: `The app replaces any previous one, and the code cannot be used again. With no unused recovery code left, 10 new ones are answered (shown once). Publishes \`UserSecondFactorAddedEvent\`. ${REAUTH_DOC} 5 wrong codes in 5 minutes lock the second step for 5 minutes (429 \`SecondFactor.Locked\`).`,
      tags: ['Account security'],
      tenant: 'optional',
      request: { body: ConfirmTotpInput },
      problemCodes: ['SecondFactor.InvalidCode', 'SecondFactor.EnrolmentNotFound', ...REAUTH_CODES],
      responses: {
        200: { description: 'The authenticator app is set up', schema: RecoveryCodesResponse },
        400: {
          description: 'A wrong code (`SecondFactor.InvalidCode`), or the set-up expired (`SecondFactor.EnrolmentNotFound`)',
        },
        403: { description: 'No recent authentication (`Identity.ReauthenticationRequired`)' },
        429: {
          description: 'Locked after 5 wrong codes (`SecondFactor.Locked`)',
          headers: { 'Retry-After': 'Seconds until the lock ends' },
        },
      },
      handler: async (ctx) => {
        const { principal, body } = ctx;
        const userId = await recent.require(principal, body.reauthentication);
        return json(await factors.confirmTotp(userId, body.enrolmentId, body.code, accountAuditContextOf(ctx)), {
          headers: noStore,
        });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/identity/account/factors/totp',
      operationId: 'removeTotp',
      summary: 'Remove your authenticator app',
      description: `With no passkey left, your recovery codes end too. Refused (422 \`Identity.SecondFactorRequired\`) when it is your last second factor and an organization you belong to requires MFA. Publishes \`UserSecondFactorRemovedEvent\`; your address gets a security notice. ${REAUTH_DOC} The body is optional.`,
      tags: ['Account security'],
      tenant: 'optional',
      request: { body: ReauthenticatedChangeInput },
      problemCodes: ['SecondFactor.NotEnrolled', 'Identity.SecondFactorRequired', ...REAUTH_CODES],
      responses: {
        204: { description: 'Removed' },
        403: { description: 'No recent authentication (`Identity.ReauthenticationRequired`)' },
        404: { description: 'No authenticator app is set up (`SecondFactor.NotEnrolled`)' },
        422: { description: 'Your last second factor while an organization requires MFA (`Identity.SecondFactorRequired`)' },
      },
      handler: async (ctx) => {
        const { principal, body } = ctx;
        const userId = await recent.require(principal, body?.reauthentication);
        await factors.removeTotp(userId, accountAuditContextOf(ctx));
        return new Response(null, { status: 204, headers: noStore });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/account/recovery-codes',
      operationId: 'regenerateRecoveryCodes',
      summary: 'Make a new set of recovery codes',
      description: `10 new codes, shown once; the old set stops working. Needs a second factor (404 \`SecondFactor.NotEnrolled\`). Publishes \`UserSecondFactorAddedEvent\`. ${REAUTH_DOC} The body is optional.`,
      tags: ['Account security'],
      tenant: 'optional',
      request: { body: ReauthenticatedChangeInput },
      problemCodes: ['SecondFactor.NotEnrolled', ...REAUTH_CODES],
      responses: {
        201: { description: 'The new codes', schema: RecoveryCodesResponse },
        403: { description: 'No recent authentication (`Identity.ReauthenticationRequired`)' },
        404: { description: 'No second factor to recover (`SecondFactor.NotEnrolled`)' },
      },
      handler: async (ctx) => {
        const { principal, body } = ctx;
        const userId = await recent.require(principal, body?.reauthentication);
        const recoveryCodes = await factors.regenerateRecoveryCodes(userId, accountAuditContextOf(ctx));
        return json({ recoveryCodes }, { status: 201, headers: noStore });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/identity/organizations/{orgId}/members/{userId}/factors',
      operationId: 'resetMemberSecondFactors',
      summary: "Reset a member's second factors (lost device)",
      description:
        "Removes the member's authenticator app, recovery codes and pending set-ups (and passkeys, when the passkeys feature can remove them), and ends their second-step lock. For the organization's owners and platform administrators; only a platform administrator resets a platform administrator. The member is told by mail and a SecurityAlert (`UserSecondFactorsResetEvent`); an organization that requires MFA sends them to set up a factor at their next sign-in.",
      tags: ['Account security'],
      request: { params: MemberParams },
      problemCodes: ['Identity.OrganizationNotFound', 'Identity.MemberNotFound'],
      responses: {
        204: { description: 'Reset' },
        403: { description: 'Not an owner of the organization (`Auth.Forbidden`)' },
        404: {
          description:
            'Not the organization of your token, unless you are a platform administrator (`Identity.OrganizationNotFound`), or no such member (`Identity.MemberNotFound`)',
        },
      },
      handler: async (ctx) => {
        const { principal, params } = ctx;
        await factors.resetAll(params.userId, actorOf(principal), params.orgId, accountAuditContextOf(ctx));
        return new Response(null, { status: 204, headers: noStore });
      },
    }),
  ];
}
