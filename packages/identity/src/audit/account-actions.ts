import {
  type AuditActor,
  type AuditRequestFacts,
  auditActorOf,
  auditRequestOf,
  defineAuditActions,
  type Principal,
} from '@idt/core';

/**
 * The audit actions of account security: second factors, passkeys, e-mail
 * changes, sessions, setup, organizations' security policies and API keys.
 * A user's own account belongs to no organization, so those are recorded on
 * the platform trail; an organization's policy, a reset by its owner and its
 * API keys on the organization's trail.
 */
export const AccountAuditActions = defineAuditActions('identity', {
  totpAdded: {
    action: 'identity.totp.added',
    description: 'A user confirmed an authenticator app (TOTP) with a first code; it replaced any previous one.',
    targetType: 'user',
  },
  totpRemoved: {
    action: 'identity.totp.removed',
    description: 'A user removed their authenticator app (TOTP); without a passkey left, their recovery codes ended too.',
    targetType: 'user',
  },
  recoveryCodesRegenerated: {
    action: 'identity.recoveryCodes.regenerated',
    description: 'A user made a new set of recovery codes; the old set stopped working.',
    targetType: 'user',
  },
  secondFactorsReset: {
    action: 'identity.secondFactors.reset',
    description:
      "An organization owner or a platform administrator reset a member's second factors (authenticator app, recovery codes, passkeys).",
    targetType: 'user',
  },
  passkeyAdded: {
    action: 'identity.passkey.added',
    description: 'A user registered a passkey.',
    targetType: 'passkey',
  },
  passkeyRenamed: {
    action: 'identity.passkey.renamed',
    description: 'A user renamed one of their passkeys.',
    targetType: 'passkey',
  },
  passkeyRemoved: {
    action: 'identity.passkey.removed',
    description: 'A user removed one of their passkeys.',
    targetType: 'passkey',
  },
  emailChangeRequested: {
    action: 'identity.emailChange.requested',
    description: 'A signed-in user asked to change their e-mail address; a confirmation link was mailed to the new one.',
    targetType: 'user',
  },
  emailChangeConfirmed: {
    action: 'identity.emailChange.confirmed',
    description: 'A user confirmed a new e-mail address with the mailed link; it is now their address and username.',
    targetType: 'user',
  },
  sessionRevoked: {
    action: 'identity.session.revoked',
    description: 'A user revoked one of their sign-in sessions (account API or account page); its tokens stopped working.',
    targetType: 'session',
  },
  sessionEvicted: {
    action: 'identity.session.evicted',
    description: "A sign-in pushed a user past the concurrent session limit; the user's oldest session was revoked.",
    targetType: 'session',
  },
  setupCompleted: {
    action: 'identity.setup.completed',
    description: 'Setup created the first administrator, the platform organization and its owner membership.',
    targetType: 'organization',
  },
  securityPolicyChanged: {
    action: 'identity.securityPolicy.changed',
    description: "An organization's security policy (requireMfa, requireVerifiedEmail) was changed.",
    targetType: 'organization',
  },
  apiKeyCreated: {
    action: 'identity.apiKey.created',
    description: 'A user created an API key in their organization.',
    targetType: 'apiKey',
  },
  apiKeyRevoked: {
    action: 'identity.apiKey.revoked',
    description: 'An API key was deleted; it stopped working at once.',
    targetType: 'apiKey',
  },
});

/**
 * Who asked for an account change and where from, for its audit record: the
 * routes pass `{ actor: auditActorOf(principal), ...auditRequestOf(route) }`.
 * Callers without a request (the sign-in pages, the CLI) may leave parts out;
 * the service then names the user it acts for.
 */
export interface AccountAuditContext extends Partial<AuditRequestFacts> {
  /** The actor of the record; the service's default when absent. */
  readonly actor?: AuditActor;
}

/** The request facts of an entry (`null` for each part the context leaves out). */
export function auditRequestFacts(context: AccountAuditContext = {}): AuditRequestFacts {
  return { ip: context.ip ?? null, userAgent: context.userAgent ?? null, traceId: context.traceId ?? null };
}

/** The context's actor, or the user the change is for. */
export function auditActorFor(context: AccountAuditContext, userId: string, display: string | null = null): AuditActor {
  return context.actor ?? { type: 'user', id: userId, display };
}

/**
 * The audit context of an API request: its principal as the actor
 * (`auditActorOf`), and its client address, user agent and trace id.
 *
 * @example
 * handler: async (ctx) => factors.removeTotp(userId, accountAuditContextOf(ctx)),
 */
export function accountAuditContextOf(
  route: Parameters<typeof auditRequestOf>[0] & { readonly principal: Principal | null },
): AccountAuditContext {
  return { ...(route.principal ? { actor: auditActorOf(route.principal) } : {}), ...auditRequestOf(route) };
}
