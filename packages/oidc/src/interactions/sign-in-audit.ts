import type { AuditEntry, AuditRequestFacts } from '@idt/core';
import { OidcAuditActions, type SignInFailureReason, UNKNOWN_SIGN_IN_ACTOR, userActor } from '../audit-actions.js';
import type { Interaction } from './interaction.js';
import { pageRequestFacts } from './page-request-facts.js';

/** The request facts of a sign-in page's request: client address, user agent, trace id. */
export function signInRequestFacts(interaction: Interaction): AuditRequestFacts {
  return pageRequestFacts(interaction.request, interaction.services.trustProxy);
}

/** How a sign-in ended: a session started, the signed-in account's re-authenticated, or a step-up in the consent prompt. */
export type SignInSessionKind = 'started' | 'reauthenticated' | 'stepUp';

/**
 * The record of a completed sign-in, to write in the transaction that
 * starts (or re-authenticates) the identity session: the trail of the
 * organization it decided, else of the client's organization, else the
 * platform's. Resolves the client first; the returned function makes the
 * entry once the session's id is known.
 */
export async function signInSucceededEntry(
  interaction: Interaction,
  signIn: { readonly userId: string; readonly amr: readonly string[]; readonly organizationId: string | null },
): Promise<(sessionId: string, kind: SignInSessionKind) => AuditEntry> {
  const client = await interaction.client();
  const facts = signInRequestFacts(interaction);
  return (sessionId, kind) => ({
    action: OidcAuditActions.signInSucceeded.action,
    organizationId: signIn.organizationId ?? client?.organizationId ?? null,
    actor: userActor(signIn.userId),
    target: { type: 'user', id: signIn.userId, display: null },
    ...facts,
    metadata: { methods: [...signIn.amr], session: kind, sessionId, clientId: client?.clientId ?? null },
  });
}

/**
 * A sign-in was refused, in a transaction of its own (there is no change
 * to join: the one exception to "record in the change's transaction").
 * The trail is the client's organization's, else the platform's. The actor
 * is the user when the step knew them (a second factor, a federated
 * account); otherwise {@link UNKNOWN_SIGN_IN_ACTOR}, and the address typed is
 * never recorded, nor a hash of it.
 */
export async function recordSignInFailed(
  interaction: Interaction,
  failure: {
    readonly reason: SignInFailureReason;
    readonly userId?: string | null;
    /** The trail when not the client's organization's (`ssoRequired`: the organization whose rule refused). */
    readonly organizationId?: string;
    readonly detail?: string;
  },
): Promise<void> {
  const record = interaction.services.audit;
  if (!record) return;
  const client = await interaction.client();
  const userId = failure.userId ?? null;
  await record({
    action: OidcAuditActions.signInFailed.action,
    organizationId: failure.organizationId ?? client?.organizationId ?? null,
    actor: userId ? userActor(userId) : UNKNOWN_SIGN_IN_ACTOR,
    target: userId ? { type: 'user', id: userId, display: null } : null,
    outcome: 'failure',
    ...signInRequestFacts(interaction),
    metadata: {
      reason: failure.reason,
      clientId: client?.clientId ?? null,
      ...(failure.detail ? { detail: failure.detail } : {}),
    },
  });
}
