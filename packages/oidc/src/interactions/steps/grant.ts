import type { StoredClient } from '../../clients/store.js';
import { LOGIN_SCOPES } from '../../provider/create-provider.js';
import type { Interaction } from '../interaction.js';

/** The scopes the request asks that the client may have: the login scopes and the API's. */
export function requestedScopes(interaction: Interaction, client: StoredClient): { oidc: string[]; api: string[] } {
  const allowed = new Set(client.scopes);
  const requested = String(interaction.details.params.scope ?? '')
    .split(' ')
    .filter((scope) => scope && allowed.has(scope));
  return {
    oidc: requested.filter((scope) => LOGIN_SCOPES.has(scope)),
    api: requested.filter((scope) => !LOGIN_SCOPES.has(scope)),
  };
}

/** Whether the user already consented to every scope this request asks of a (third-party) client. */
export async function consentRemembered(interaction: Interaction, client: StoredClient, userId: string): Promise<boolean> {
  const scopes = requestedScopes(interaction, client);
  const remembered = new Set((await interaction.services.consents.find(userId, client.clientId)) ?? []);
  return [...scopes.oidc, ...scopes.api].every((scope) => remembered.has(scope));
}

/**
 * Saves the grant of what the request asks for (the scopes the client may
 * have, the claims the consent prompt found missing): `existingId`'s grant
 * when it works in the same organization, else a new one with its context.
 */
export async function saveGrant(
  interaction: Interaction,
  client: StoredClient,
  userId: string,
  organization: string | null,
  existingId: string | undefined,
): Promise<string> {
  const { services, details } = interaction;
  const provider = services.provider();
  const scopes = requestedScopes(interaction, client);
  const existing = existingId ? await provider.Grant.find(existingId) : undefined;
  const context = existingId ? await services.grantContexts.get(existingId) : undefined;
  const reuse = existing && context && context.organizationId === organization;
  const grant = reuse ? existing : new provider.Grant({ accountId: userId, clientId: client.clientId });
  if (scopes.oidc.length) grant.addOIDCScope(scopes.oidc.join(' '));
  // Access tokens are for the API and carry the login scopes as well (userinfo reads them).
  const resourceScopes = [...scopes.oidc, ...scopes.api];
  if (resourceScopes.length) grant.addResourceScope(services.apiResource, resourceScopes.join(' '));
  const missingClaims = (details.prompt.details as { missingOIDCClaims?: string[] }).missingOIDCClaims;
  if (missingClaims?.length) grant.addOIDCClaims(missingClaims);
  const grantId = await grant.save();
  if (!reuse) {
    await services.grantContexts.set(
      grantId,
      { organizationId: organization, refreshTokenLifetime: services.refreshTokenLifetime(client) },
      new Date(services.clock.now().getTime() + 31_622_400_000),
    );
  }
  return grantId;
}
