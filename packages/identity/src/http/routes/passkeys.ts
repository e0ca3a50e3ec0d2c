import { defineRoute, json, noContent, type Principal, type Route } from '@idt/core';
import { ProblemError, UnauthorizedError } from '@idt/problem';
import { z } from 'zod';
import { accountAuditContextOf } from '../../audit/account-actions.js';
import { ReauthenticationInput, type RecentAuthentication } from '../../factors/recent-authentication.js';
import { PasskeyRecord, type PasskeyService, RegisterPasskeyInput, RenamePasskeyInput } from '../../passkeys/service.js';

const PasskeyParams = z.object({ passkeyId: z.uuid({ error: 'A passkey id is a GUID.' }) });
const Reauthenticated = z.object({ reauthentication: ReauthenticationInput.optional() });
const NO_STORE = { 'cache-control': 'no-store' } as const;

const REAUTHENTICATION =
  'Needs a recent authentication: the session signed in within 5 minutes, or the body carries `reauthentication` (`{ "password": "..." }` or `{ "code": "..." }`); else 403 `Identity.ReauthenticationRequired`.';

/** The signed-in user and the session the request came with (passkey challenges are bound to it). */
function sessionOf(principal: Principal | null): { userId: string; sessionId: string } {
  if (!principal) throw new UnauthorizedError('A valid credential is required.', { 'www-authenticate': 'Bearer' });
  if (principal.kind !== 'user' || !principal.userId) {
    throw new ProblemError('Auth.Forbidden', 'Account security belongs to users; sign in as one.');
  }
  if (!principal.sessionId) throw new ProblemError('Passkey.SessionRequired');
  return { userId: principal.userId, sessionId: principal.sessionId };
}

/**
 * The passkeys of the signed-in user: `GET /v1/identity/account/passkeys`,
 * `POST …/passkeys/registration-options`, `POST …/passkeys` (verify and
 * store), `PATCH …/passkeys/{passkeyId}` (rename) and `DELETE
 * …/passkeys/{passkeyId}`. Changes need a recent authentication
 * (`recent`: C1's rule; without it, any signed-in session may change them).
 */
export function createPasskeyRoutes(passkeys: PasskeyService, recent?: RecentAuthentication): Route[] {
  /** The recent-authentication rule, then the session. */
  async function changer(principal: Principal | null, reauthentication: z.infer<typeof ReauthenticationInput> | undefined) {
    const session = sessionOf(principal);
    if (recent) await recent.require(principal, reauthentication);
    return session;
  }

  return [
    defineRoute({
      method: 'GET',
      path: '/v1/identity/account/passkeys',
      operationId: 'listPasskeys',
      summary: 'Your passkeys',
      description: 'Oldest first, with their names, when they were added and last used, and whether they may be synced.',
      tags: ['Account security'],
      tenant: 'optional',
      responses: { 200: { description: 'Your passkeys', schema: z.array(PasskeyRecord) } },
      handler: async ({ principal }) => {
        const { userId } = sessionOf(principal);
        return json(await passkeys.list(userId), { headers: NO_STORE });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/account/passkeys/registration-options',
      operationId: 'passkeyRegistrationOptions',
      summary: 'Start registering a passkey',
      description: `Answers the options for the browser's \`navigator.credentials.create()\` (\`PublicKeyCredential.parseCreationOptionsFromJSON\`): the issuer's host as relying party, user verification required, resident keys preferred, your passkeys excluded. The challenge is bound to your session, works once and for 5 minutes; a newer call replaces it. Needs a sign-in session (\`Passkey.SessionRequired\` otherwise).`,
      tags: ['Account security'],
      tenant: 'optional',
      problemCodes: ['Passkey.SessionRequired', 'Passkey.LimitReached'],
      responses: {
        200: {
          description: 'WebAuthn `PublicKeyCredentialCreationOptionsJSON`',
          schema: z.record(z.string(), z.unknown()).meta({ description: 'WebAuthn `PublicKeyCredentialCreationOptionsJSON`.' }),
        },
      },
      handler: async ({ principal }) => {
        const { userId, sessionId } = sessionOf(principal);
        return json(await passkeys.registrationOptions(userId, sessionId), { headers: NO_STORE });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/account/passkeys',
      operationId: 'registerPasskey',
      summary: 'Register a passkey',
      description: `The body is the browser's \`credential.toJSON()\` (WebAuthn \`RegistrationResponseJSON\`) after \`navigator.credentials.create()\` with the options of \`registration-options\`, plus an optional \`name\`. The session's challenge is used up whatever the outcome. The origin must be the issuer's and the user verified; \`UserPasskeyAddedEvent\` is published. ${REAUTHENTICATION}`,
      tags: ['Account security'],
      tenant: 'optional',
      request: { body: RegisterPasskeyInput.extend(Reauthenticated.shape) },
      problemCodes: [
        'Passkey.SessionRequired',
        'Passkey.ChallengeExpired',
        'Passkey.Rejected',
        'Passkey.AlreadyRegistered',
        'Passkey.LimitReached',
        'Identity.ReauthenticationRequired',
      ],
      responses: {
        201: { description: 'The passkey is registered', schema: PasskeyRecord },
        400: {
          description: 'No challenge waiting (`Passkey.ChallengeExpired`), or the response did not verify (`Passkey.Rejected`)',
        },
        403: { description: 'A recent authentication is needed (`Identity.ReauthenticationRequired`)' },
        409: { description: 'The passkey is registered already (`Passkey.AlreadyRegistered`)' },
      },
      handler: async (ctx) => {
        const { reauthentication, ...response } = ctx.body;
        const { userId, sessionId } = await changer(ctx.principal, reauthentication);
        const passkey = await passkeys.register(userId, sessionId, response, accountAuditContextOf(ctx));
        return json(passkey, { status: 201, headers: NO_STORE });
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: '/v1/identity/account/passkeys/{passkeyId}',
      operationId: 'renamePasskey',
      summary: 'Rename a passkey',
      description: `Another user's passkey answers 404. ${REAUTHENTICATION}`,
      tags: ['Account security'],
      tenant: 'optional',
      request: { params: PasskeyParams, body: RenamePasskeyInput.extend(Reauthenticated.shape) },
      problemCodes: ['Passkey.SessionRequired', 'Passkey.NotFound', 'Identity.ReauthenticationRequired'],
      responses: {
        200: { description: 'The passkey, renamed', schema: PasskeyRecord },
        403: { description: 'A recent authentication is needed (`Identity.ReauthenticationRequired`)' },
        404: { description: 'You have no such passkey (`Passkey.NotFound`)' },
      },
      handler: async (ctx) => {
        const { principal, params, body } = ctx;
        const { userId } = await changer(principal, body.reauthentication);
        const renamed = await passkeys.rename(userId, params.passkeyId, { name: body.name }, accountAuditContextOf(ctx));
        return json(renamed, { headers: NO_STORE });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/identity/account/passkeys/{passkeyId}',
      operationId: 'removePasskey',
      summary: 'Remove a passkey',
      description: `It no longer signs in; \`UserPasskeyRemovedEvent\` is published. The last second factor (no authenticator app, no other passkey) of a user whose organization requires MFA cannot be removed (422 \`Identity.SecondFactorRequired\`). Another user's passkey answers 404. ${REAUTHENTICATION} The optional JSON body carries \`reauthentication\`.`,
      tags: ['Account security'],
      tenant: 'optional',
      request: { params: PasskeyParams, body: Reauthenticated.optional() },
      problemCodes: [
        'Passkey.SessionRequired',
        'Passkey.NotFound',
        'Identity.ReauthenticationRequired',
        'Identity.SecondFactorRequired',
      ],
      responses: {
        204: { description: 'The passkey is removed' },
        403: { description: 'A recent authentication is needed (`Identity.ReauthenticationRequired`)' },
        404: { description: 'You have no such passkey (`Passkey.NotFound`)' },
        422: { description: 'It is your last second factor and an organization requires MFA (`Identity.SecondFactorRequired`)' },
      },
      handler: async (ctx) => {
        const { principal, params, body } = ctx;
        const { userId } = await changer(principal, body?.reauthentication);
        await passkeys.remove(userId, params.passkeyId, accountAuditContextOf(ctx));
        return noContent(NO_STORE);
      },
    }),
  ];
}
