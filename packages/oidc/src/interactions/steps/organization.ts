import { joinMarkup, type LightResponse, markup } from '@idt/core';
import type { StoredClient } from '../../clients/store.js';
import { decideOrganization } from '../../policy/organization.js';
import type { Interaction } from '../interaction.js';
import { errorSummary } from '../pages.js';

/** The organization a grant works in (`null`: none), or the answer when it is not decided yet. */
export type OrganizationOutcome = { readonly organizationId: string | null } | { readonly answer: LightResponse };

/**
 * The organization step: decides the grant's organization
 * (`policy/organization.ts`) from the user's choice or the request's hint,
 * or answers: the choice page, or `access_denied` back to the client.
 */
export async function chooseOrganization(
  interaction: Interaction,
  client: StoredClient,
  userId: string,
  chosen: string | null | undefined,
): Promise<OrganizationOutcome> {
  const hint = chosen ?? (interaction.details.params.organization as string | undefined);
  const decision = await decideOrganization(client, userId, hint, interaction.services.directory);
  if (decision.kind === 'organization') return { organizationId: decision.organizationId };
  if (decision.kind === 'deny') return { answer: await interaction.deny(decision.description) };
  return { answer: await organizationPage(interaction, [...decision.organizations]) };
}

/**
 * The organization a submitted choice (`POST …/organization`) names: one
 * of the user's active organizations or `none`; anything else answers the
 * choice page again with its error.
 */
export async function submittedOrganization(
  interaction: Interaction,
  userId: string,
  form: URLSearchParams,
): Promise<{ readonly value: string } | { readonly answer: LightResponse }> {
  const value = form.get('organization') ?? '';
  const organizations = await interaction.services.directory.activeOrganizations(userId);
  if (value !== 'none' && !organizations.some((organization) => organization.id === value)) {
    return { answer: await organizationPage(interaction, organizations, ['Choose one of your organizations.']) };
  }
  return { value };
}

/** The choice between the user's organizations (and none). */
function organizationPage(
  interaction: Interaction,
  organizations: ReadonlyArray<{ id: string; name: string }>,
  errors: string[] = [],
): Promise<LightResponse> {
  const choices = organizations.map(
    (
      organization,
      index,
    ) => markup`<div class="choice"><input type="radio" id="org-${index}" name="organization" value="${organization.id}"${index === 0 && markup` checked`}>
<label for="org-${index}">${organization.name}</label></div>`,
  );
  const body = markup`<h1>Choose an organization</h1>
${errorSummary(errors)}
<form method="post" action="${interaction.path('organization')}">
${interaction.csrfField()}
<fieldset>
<legend>Which organization do you want to work in?</legend>
${joinMarkup(choices, '\n')}
<div class="choice"><input type="radio" id="org-none" name="organization" value="none"><label for="org-none">No organization</label></div>
</fieldset>
<button type="submit">Continue</button>
</form>
<div class="links"><a href="${interaction.path('abort')}">Cancel and return to the application</a></div>`;
  return interaction.brandedPage(errors.length ? 400 : 200, { title: 'Choose an organization' }, body);
}
