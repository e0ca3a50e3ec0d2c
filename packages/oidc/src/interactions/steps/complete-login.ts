import type { AuditEntry, LightResponse } from '@idt/core';
import { decideOrganization, type OrganizationDecision } from '../../policy/organization.js';
import type { StartedSession } from '../directory.js';
import type { Interaction } from '../interaction.js';
import { consentRemembered, saveGrant } from './grant.js';

/** How the user signed in: the methods (RFC 8176 `amr`), the `acr` and when (`auth_time`). */
export interface LoginAuthentication {
  readonly amr: readonly string[];
  readonly acr: string;
  readonly at: Date;
}

/**
 * Ends the login prompt, and the consent prompt with it when that one
 * would ask nothing and decide nothing differently (see
 * {@link consentWithLogin}): the provider then issues the code on its way
 * back, without a second interaction and its two exchanges. The sign-in
 * pipeline (`pipeline.ts`) ends here once every step is done and the
 * session cookie is set; `decision` is the organization it decided (else
 * it is decided here).
 */
export async function completeLogin(
  interaction: Interaction,
  session: { readonly sessionId: string; readonly userId: string },
  authentication: LoginAuthentication,
  decision?: OrganizationDecision,
): Promise<LightResponse> {
  const consent = await consentWithLogin(interaction, session.userId, decision);
  return interaction.finish(
    {
      login: {
        accountId: session.userId,
        amr: [...authentication.amr],
        acr: authentication.acr,
        // `auth_time` from the injected clock (the max_age check reads the same clock).
        ts: Math.floor(authentication.at.getTime() / 1000),
        remember: true,
      },
      idt: { sessionId: session.sessionId },
      ...(consent ? { consent } : {}),
    },
    false,
  );
}

/**
 * The grant of a sign-in whose consent prompt would follow only to grant
 * at once, made with the login instead, with the same decisions in the
 * same order: the organization (a bound client's enrollment included)
 * decided without a choice, then a first-party client or consent the user
 * already gave to every scope asked. Never with `prompt=consent` or a
 * `claims` request, nor when the account is already signed in to the
 * provider's session (its grant is reused, as before). `undefined` leaves
 * the consent prompt to follow and decide as it always did.
 */
async function consentWithLogin(
  interaction: Interaction,
  userId: string,
  decided: OrganizationDecision | undefined,
): Promise<{ grantId: string } | undefined> {
  const { details } = interaction;
  if (details.session?.accountId === userId || details.params.claims !== undefined) return undefined;
  if (
    String(details.params.prompt ?? '')
      .split(' ')
      .includes('consent')
  )
    return undefined;
  const client = await interaction.client();
  if (!client) return undefined;
  const hint = details.params.organization as string | undefined;
  const decision = decided ?? (await decideOrganization(client, userId, hint, interaction.services.directory));
  if (decision.kind !== 'organization') return undefined;
  if (!client.firstParty && !(await consentRemembered(interaction, client, userId))) return undefined;
  return { grantId: await saveGrant(interaction, client, userId, decision.organizationId, undefined) };
}

/**
 * Re-authentication of the account already signed in keeps its session
 * (`reused`: the caller marks it re-authenticated); anything else starts one,
 * recording `audit`'s entry (the sign-in) in the session's transaction.
 */
export async function reuseOrStartSession(
  interaction: Interaction,
  userId: string,
  amr: string[],
  audit?: (sessionId: string) => AuditEntry,
): Promise<StartedSession & { readonly reused: boolean }> {
  const { details, services } = interaction;
  const existing = details.session?.uid ? await services.provider().Session.findByUid(details.session.uid) : undefined;
  if (existing?.accountId === userId) {
    const sid = Object.values(existing.authorizations ?? {}).find((entry) => entry?.sid)?.sid;
    const cookie = interaction.sessionCookie();
    const current = cookie ? await services.directory.findSession(cookie) : undefined;
    if (sid && current && current.sessionId === sid && cookie) {
      return {
        sessionId: sid,
        userId,
        cookieValue: cookie,
        expiresAt: new Date(services.clock.now().getTime() + 86_400_000).toISOString(),
        reused: true,
      };
    }
  }
  const started = await services.directory.startSession(userId, {
    ip: interaction.clientIp(),
    userAgent: interaction.request.headers.get('user-agent') ?? '',
    amr,
    ...(audit ? { audit: (sessionId: string) => [audit(sessionId)] } : {}),
  });
  return { ...started, reused: false };
}
