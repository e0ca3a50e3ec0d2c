import type { LightResponse } from '@idt/core';
import { decideOrganization } from '../../policy/organization.js';
import type { StartedSession } from '../directory.js';
import type { Interaction } from '../interaction.js';
import { consentRemembered, saveGrant } from './grant.js';

/**
 * Ends the login prompt, and the consent prompt with it when that one
 * would ask nothing and decide nothing differently (see
 * {@link consentWithLogin}): the provider then issues the code on its way
 * back, without a second interaction and its two exchanges. Every way in
 * (password, one-time code, magic link) ends here; the caller has set the
 * session cookie.
 */
export async function completeLogin(
  interaction: Interaction,
  session: { readonly sessionId: string; readonly userId: string },
  amr: string[],
): Promise<LightResponse> {
  const consent = await consentWithLogin(interaction, session.userId);
  return interaction.finish(
    {
      login: { accountId: session.userId, amr, remember: true },
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
async function consentWithLogin(interaction: Interaction, userId: string): Promise<{ grantId: string } | undefined> {
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
  const decision = await decideOrganization(client, userId, hint, interaction.services.directory);
  if (decision.kind !== 'organization') return undefined;
  if (!client.firstParty && !(await consentRemembered(interaction, client, userId))) return undefined;
  return { grantId: await saveGrant(interaction, client, userId, decision.organizationId, undefined) };
}

/** Re-authentication of the account already signed in keeps its session; anything else starts one. */
export async function reuseOrStartSession(interaction: Interaction, userId: string, amr: string[]): Promise<StartedSession> {
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
      };
    }
  }
  return services.directory.startSession(userId, {
    ip: interaction.clientIp(),
    userAgent: interaction.request.headers.get('user-agent') ?? '',
    amr,
  });
}
