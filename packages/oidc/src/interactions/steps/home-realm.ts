import { LightResponse, markup } from '@idt/core';
import { EmailSchema } from '@idt/identity';
import type { FederationStart, HomeRealm } from '../../federation.js';
import type { Interaction } from '../interaction.js';
import { recordSignInFailed } from '../sign-in-audit.js';
import { federationFailedPage } from './federated.js';
import { signInPage } from './sign-in-page.js';

/**
 * The routing step of a sign-in with federation (`@idt/sso` fills the
 * port): identifier-first when any organization has a connection, an
 * address whose domain an organization verified and connected goes to that
 * organization's identity provider, the `login_hint` and `organization`
 * hints route straight there, platform connections are buttons, and an
 * organization's `ssoRequired` refuses the other first factors for its
 * domains (the rule is here, the first-factor steps ask it).
 */

/** The interaction action that takes the identifier-first form. */
export const IDENTIFY_ACTION = 'identify';
/** The interaction action a "Continue with …" button opens (`?connection=`). */
export const FEDERATE_ACTION = 'federate';
/** The interaction action the federation module sends the browser back to (`?result=`). */
export const FEDERATED_ACTION = 'federated';

const CONNECTION_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The login prompt's routing by hint, before any page: an `organization`
 * hint of an organization with a connection, or a `login_hint` whose
 * domain one verified and connected, goes straight to that identity
 * provider. `undefined` when nothing routes (or without federation).
 */
export async function routeByHint(interaction: Interaction): Promise<LightResponse | undefined> {
  const federation = interaction.services.federation();
  if (!federation) return undefined;
  const { params } = interaction.details;
  const organization = typeof params.organization === 'string' ? params.organization : undefined;
  const hint = typeof params.login_hint === 'string' ? EmailSchema.safeParse(params.login_hint.trim()) : undefined;
  let realm: HomeRealm | undefined;
  if (organization) realm = await federation.organizationRealm(organization);
  if (!realm && hint?.success) realm = await federation.homeRealm(hint.data);
  if (!realm) return undefined;
  return begin(interaction, realm.connectionId, hint?.success ? hint.data : undefined, 'redirect');
}

/**
 * The identifier-first form (`POST …/identify`): an address of a verified,
 * connected domain goes to its organization's provider (a page that moves
 * on by itself: a redirect answering a form would be held to the page's
 * `form-action`); any other address gets the password page.
 */
export async function submitIdentifier(interaction: Interaction, form: URLSearchParams): Promise<LightResponse> {
  const rawEmail = (form.get('email') ?? '').trim();
  const email = EmailSchema.safeParse(rawEmail);
  if (!email.success) {
    return signInPage(interaction, { status: 400, email: rawEmail, errors: ['Enter a valid e-mail address.'] });
  }
  const realm = await interaction.services.federation()?.homeRealm(email.data);
  if (!realm) return signInPage(interaction, { email: email.data, identified: true });
  return begin(interaction, realm.connectionId, email.data, 'page', realm.organizationName);
}

/** The sign-in page again, for a single sign-on option that cannot start (no federation, a malformed connection). */
function optionUnavailable(interaction: Interaction): Promise<LightResponse> {
  return signInPage(interaction, { status: 400, errors: ['That sign-in option is not available. Choose another.'] });
}

/**
 * A "Continue with …" button (`GET …/federate?connection=`): a platform
 * connection, or the connection an `ssoRequired` refusal offers; the
 * federation module refuses any other (disabled, unknown).
 */
export async function startFederation(interaction: Interaction): Promise<LightResponse> {
  const connection = interaction.request.url.searchParams.get('connection') ?? '';
  if (!interaction.services.federation() || !CONNECTION_ID.test(connection)) return optionUnavailable(interaction);
  return begin(interaction, connection, undefined, 'redirect');
}

/**
 * The `ssoRequired` rule: an address of a domain verified by an
 * organization that requires single sign-on cannot sign in with a
 * password, a passkey or a mailed code; the answer is the sign-in page
 * with a button to that organization's provider. `undefined` lets the
 * sign-in go on.
 */
export async function ssoRequiredRefusal(
  interaction: Interaction,
  email: string | undefined,
  userId: string | null,
): Promise<LightResponse | undefined> {
  const federation = interaction.services.federation();
  if (!federation || !email) return undefined;
  const realm = await federation.homeRealm(email);
  if (!realm?.ssoRequired) return undefined;
  // On the trail of the organization whose rule refused it (not the client's): its administrators see it.
  await recordSignInFailed(interaction, {
    reason: 'ssoRequired',
    userId,
    organizationId: realm.organizationId,
    detail: realm.connectionId,
  });
  return signInPage(interaction, {
    status: 403,
    email,
    identified: true,
    errors: [`${realm.organizationName} requires you to sign in with its single sign-on.`],
    continueWith: { connectionId: realm.connectionId, name: `${realm.organizationName} single sign-on` },
  });
}

/**
 * Starts the sign-in at a connection: a 303 to the provider (`redirect`,
 * for a link or a hint), or a page that moves on by itself (`page`, for a
 * form's answer); a connection that cannot start ends on the failure page.
 */
async function begin(
  interaction: Interaction,
  connectionId: string,
  loginHint: string | undefined,
  answer: 'redirect' | 'page',
  organizationName?: string,
): Promise<LightResponse> {
  const federation = interaction.services.federation();
  if (!federation) return optionUnavailable(interaction);
  const started: FederationStart = await federation.begin(connectionId, {
    interactionUid: interaction.details.uid,
    returnPath: interaction.path(FEDERATED_ACTION),
    ...(loginHint ? { loginHint } : {}),
  });
  if (started.kind === 'failed') return federationFailedPage(interaction, started);
  if (!isBrowserUrl(started.url)) {
    interaction.services.logger.warn('federation answered a sign-in URL that is not http(s)', { connectionId });
    return federationFailedPage(interaction, {
      reason: 'invalid',
      organizationName: organizationName ?? null,
      connectionName: null,
    });
  }
  if (answer === 'redirect') {
    return new LightResponse(null, { status: 303, headers: { location: started.url, 'cache-control': 'no-store' } });
  }
  return movingOnPage(interaction, started.url, organizationName);
}

/** Whether `url` is an absolute http(s) URL (the page puts it in a link and a refresh, which do not vet schemes). */
function isBrowserUrl(url: string): boolean {
  try {
    const { protocol } = new URL(url);
    return protocol === 'https:' || protocol === 'http:';
  } catch {
    return false;
  }
}

/** A page that sends the browser on to `url` at once (`meta refresh`), with a link for when it does not. */
function movingOnPage(interaction: Interaction, url: string, organizationName: string | undefined): Promise<LightResponse> {
  const where = organizationName ? `${organizationName}’s sign-in` : 'your organization’s sign-in';
  return interaction.brandedPage(
    200,
    { title: 'Continue to sign in', refresh: { url, seconds: 0 } },
    markup`<h1>Continue to ${where}</h1>
<p>Your organization signs you in with its own identity provider. You are being taken there now.</p>
<p><a class="button" href="${url}">Continue to ${where}</a></p>
<div class="links"><a href="${interaction.path()}">Use another way to sign in</a></div>`,
  );
}
