import { type AuditActor, type AuditEntry, type AuditMetadata, type AuditRequestFacts, defineAuditActions } from '@idt/core';

/**
 * The audit actions of the OpenID provider: sign-ins at the end of the
 * sign-in pipeline, refused sign-ins, OAuth clients and logout.
 *
 * Names are camelCase inside each dotted part (`oidc.signIn.failed`): the
 * trail's action pattern (`AUDIT_ACTION_PATTERN` of `@idt/core`) allows no hyphen.
 */
export const OidcAuditActions = defineAuditActions('oidc', {
  signInSucceeded: {
    action: 'oidc.signIn.succeeded',
    description:
      'A sign-in completed at the sign-in pages (the session started or was re-authenticated, a step-up included). Trail: the grant organization, else the client’s, else the platform.',
    targetType: 'user',
  },
  signInFailed: {
    action: 'oidc.signIn.failed',
    description:
      'A sign-in was refused (outcome failure): `reason` is wrongPassword, locked, wrongCode, replayedCode, secondFactorLocked, passkeyRefused, ssoRequired or federation. Trail: the client’s organization, else the platform.',
    targetType: 'user',
  },
  clientRegistered: { action: 'oidc.client.registered', description: 'An OAuth client was registered.', targetType: 'client' },
  clientUpdated: {
    action: 'oidc.client.updated',
    description: 'An OAuth client’s redirect URIs, logout URIs, scopes or refresh lifetime changed (`metadata.fields`).',
    targetType: 'client',
  },
  clientSecretRotated: {
    action: 'oidc.client.secretRotated',
    description: 'An OAuth client’s secret was replaced (`metadata.issuedAccessEnded`: its tokens ended with it).',
    targetType: 'client',
  },
  clientSuspended: {
    action: 'oidc.client.suspended',
    description: 'An OAuth client was suspended: its tokens ended.',
    targetType: 'client',
  },
  clientReinstated: {
    action: 'oidc.client.reinstated',
    description: 'A suspended OAuth client was reinstated.',
    targetType: 'client',
  },
  clientDeleted: {
    action: 'oidc.client.deleted',
    description: 'An OAuth client was deleted with its grants and tokens.',
    targetType: 'client',
  },
  clientBrandingChanged: {
    action: 'oidc.client.brandingChanged',
    description: 'An application’s sign-in page branding (name, tagline, theme, logo) was set.',
    targetType: 'client',
  },
  sessionLoggedOut: {
    action: 'oidc.session.loggedOut',
    description:
      'A user logged out at the end-session endpoint: the single sign-on session, its identity session and grants ended.',
    targetType: 'session',
  },
});

/** Why a sign-in was refused (`metadata.reason` of `oidc.signIn.failed`). */
export type SignInFailureReason =
  | 'wrongPassword'
  | 'locked'
  | 'wrongCode'
  | 'replayedCode'
  | 'secondFactorLocked'
  | 'passkeyRefused'
  | 'ssoRequired'
  | 'federation';

/**
 * The actor of a refused sign-in whose account is not known (a wrong
 * address or password: the pages never say which, and neither does the
 * trail). No address, nor a hash of one, is kept: a hash of an e-mail
 * address is reversed by guessing, and the address may be no user's.
 */
export const UNKNOWN_SIGN_IN_ACTOR: AuditActor = Object.freeze({ type: 'system', id: null, display: null });

/** A user as an audit actor (display: their address when the caller has it). */
export function userActor(userId: string, display: string | null = null): AuditActor {
  return { type: 'user', id: userId, display };
}

/** Who did a change on the clients API and where the request came from (the route's principal and context). */
export interface ClientAuditContext {
  readonly actor: AuditActor;
  readonly request?: AuditRequestFacts;
}

/** An entry of a client action on the client's organization trail (the platform's for a client bound to none). */
export function clientAuditEntry(
  action: string,
  client: { readonly clientId: string; readonly name: string; readonly organizationId: string | null },
  context: ClientAuditContext,
  metadata?: AuditMetadata,
): AuditEntry {
  return {
    action,
    organizationId: client.organizationId,
    actor: context.actor,
    target: { type: 'client', id: client.clientId, display: client.name },
    ...(context.request ?? {}),
    ...(metadata ? { metadata } : {}),
  };
}
