import { type LightResponse, markup } from '@idt/core';
import type { StoredClient } from '../../clients/store.js';
import { requireActive } from '../../policy/organization.js';
import type { Interaction } from '../interaction.js';
import { consentRemembered, requestedScopes, saveGrant } from './grant.js';

/**
 * The consent step, once the organization is decided: a first-party client,
 * or consent the user already gave to every scope asked, grants at once;
 * otherwise the consent page asks.
 */
export async function consentOrFinish(
  interaction: Interaction,
  client: StoredClient,
  userId: string,
  organization: string | null,
): Promise<LightResponse> {
  if (!client.firstParty && !(await consentRemembered(interaction, client, userId))) {
    return consentPage(interaction, client, organization);
  }
  return grantAndFinish(interaction, client, userId, organization);
}

/**
 * The consent decision (`POST …/consent`): a denial ends the interaction
 * with `access_denied`; an approval checks the membership again, remembers
 * the consent and grants.
 */
export async function submitConsent(
  interaction: Interaction,
  client: StoredClient,
  userId: string,
  form: URLSearchParams,
): Promise<LightResponse> {
  const { services } = interaction;
  if (form.get('decision') !== 'approve') return interaction.deny('The user denied access.');
  const organizationValue = form.get('organization') ?? 'none';
  const gate = await requireActive(
    userId,
    client.organizationId ?? (organizationValue === 'none' ? null : organizationValue),
    services.directory,
  );
  if (gate.kind === 'deny') return interaction.deny(gate.description);
  const organization = gate.organizationId;
  const scopes = requestedScopes(interaction, client);
  await services.consents.remember(userId, client.clientId, [...scopes.oidc, ...scopes.api], services.clock.now());
  return grantAndFinish(interaction, client, userId, organization);
}

async function grantAndFinish(
  interaction: Interaction,
  client: StoredClient,
  userId: string,
  organization: string | null,
): Promise<LightResponse> {
  const grantId = await saveGrant(interaction, client, userId, organization, interaction.details.grantId);
  return interaction.finish({ consent: { grantId } }, true);
}

/** The page asking the user to allow a (third-party) client the scopes it asks. */
async function consentPage(interaction: Interaction, client: StoredClient, organization: string | null): Promise<LightResponse> {
  const { services } = interaction;
  const branding = await interaction.branding();
  const descriptions = new Map((await services.clients.scopes()).map((row) => [row.scope, row.description]));
  const scopes = requestedScopes(interaction, client);
  const name = branding?.displayName ?? client.name;
  const body = markup`<h1>Allow ${name}?</h1>
<p>${name} asks to:</p>
<ul class="scopes">${[...scopes.oidc, ...scopes.api]
    .filter((scope) => scope !== 'openid')
    .map((scope) => markup`<li>${descriptions.get(scope) ?? scope}</li>`)}<li>Know who you are</li></ul>
<form method="post" action="${interaction.path('consent')}">
${interaction.csrfField()}
<input type="hidden" name="organization" value="${organization ?? 'none'}">
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>
<p class="hint">You can withdraw this later from <a href="${services.pathPrefix}/connect/account" target="_blank" rel="noopener">your account</a>.</p>`;
  return interaction.page(200, { title: 'Allow access' }, body, branding);
}
