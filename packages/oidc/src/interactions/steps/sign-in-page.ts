import { type LightResponse, markup, type SafeHtml } from '@idt/core';
import type { Interaction } from '../interaction.js';
import { errorSummary, notice } from '../pages.js';
import { passkeySignInForm } from './passkey-forms.js'; // D: passkeys

/** What the sign-in page shows besides its forms. */
export interface SignInView {
  readonly errors?: readonly string[];
  /** The address to fill in (the one just entered, else the request's `login_hint`). */
  readonly email?: string;
  readonly notice?: string;
  readonly status?: number;
  /** The address was entered on the identifier-first page and routes nowhere: the password page follows. */
  readonly identified?: boolean;
  /** A button to an organization's single sign-on (the `ssoRequired` refusal offers it). */
  readonly continueWith?: { readonly connectionId: string; readonly name: string };
  /** An identity waiting to be linked to the account of `email`: the password form only (`federated.ts`). */
  readonly link?: { readonly email: string; readonly connectionName: string; readonly handle: string };
}

/**
 * The first page of a sign-in (the login prompt): the password form and the
 * sign-in e-mail form (magic link or one-time code), a passkey, the
 * platform's "Continue with …" buttons, and a way back. With federation
 * and an organization connection it asks the address first
 * (`home-realm.ts` routes it). Every way in that fails comes back here
 * with its message.
 */
export async function signInPage(interaction: Interaction, view: SignInView = {}): Promise<LightResponse> {
  const federation = interaction.services.federation();
  if (view.link) return linkView(interaction, view, view.link);
  const [identifierFirst, platform] = federation
    ? await Promise.all([federation.identifierFirst(), federation.platformConnections()])
    : [false, []];
  const buttons = [
    ...(view.continueWith ? [view.continueWith] : []),
    ...platform.map((connection) => ({ connectionId: connection.id, name: connection.name })),
  ];
  const federationLinks = federationButtons(interaction, buttons);
  const body =
    identifierFirst && !view.identified && !view.continueWith
      ? identifierView(interaction, view, federationLinks)
      : passwordView(interaction, view, federationLinks);
  return interaction.brandedPage(view.status ?? 200, { title: 'Sign in', scripts: ['focus.js', 'passkey.js'] }, body);
}

/** The "Continue with …" buttons: links (`GET …/federate`), so no form's `form-action` holds the redirect. */
function federationButtons(
  interaction: Interaction,
  connections: ReadonlyArray<{ readonly connectionId: string; readonly name: string }>,
): SafeHtml {
  if (connections.length === 0) return markup``;
  const links = connections.map(
    (connection) =>
      markup`<a class="button secondary" href="${interaction.path('federate')}?connection=${encodeURIComponent(connection.connectionId)}">Continue with ${connection.name}</a>`,
  );
  return markup`<div class="federation">${links.map((link) => markup`${link}\n`)}</div>`;
}

function errorsAttribute(errors: readonly string[]): SafeHtml | false {
  return errors.length > 0 && markup` aria-describedby="error-summary"`;
}

/** The page's heading, messages and the start of its first form: the e-mail address (the form goes on after it). */
function addressForm(interaction: Interaction, view: SignInView, action: 'identify' | 'login'): SafeHtml {
  const errors = view.errors ?? [];
  const loginHint = interaction.details.params.login_hint as string | undefined;
  return markup`<h1>Sign in</h1>
${errorSummary(errors)}${notice(view.notice)}
<form method="post" action="${interaction.path(action)}" novalidate>
${interaction.csrfField()}
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" autocomplete="username webauthn" required value="${view.email ?? loginHint ?? ''}"${errorsAttribute(errors)}>`;
}

/** Identifier-first: the address alone (its domain may route to an organization's provider), a passkey, the buttons. */
function identifierView(interaction: Interaction, view: SignInView, federation: SafeHtml): SafeHtml {
  return markup`${addressForm(interaction, view, 'identify')}
<button type="submit">Continue</button>
</form>
${passkeySignInForm(interaction)}
${federation}
<div class="links"><a href="${interaction.path('abort')}">Cancel and return to the application</a></div>`;
}

/** The password page: password, sign-in e-mail, passkey and the buttons. */
function passwordView(interaction: Interaction, view: SignInView, federation: SafeHtml): SafeHtml {
  return markup`${addressForm(interaction, view, 'login')}
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<p class="hint"><a href="${interaction.path('forgot')}">Forgot your password?</a></p>
<button type="submit">Sign in</button>
</form>
${passkeySignInForm(interaction)}
<form method="post" action="${interaction.path('passwordless')}">
${interaction.csrfField()}
<fieldset>
<legend class="sr-only">Sign in without a password</legend>
<label for="pl-email">Or get a sign-in e-mail</label>
<input id="pl-email" name="email" type="email" autocomplete="email" value="${view.email ?? ''}">
<button type="submit" class="secondary" name="method" value="link">E-mail me a sign-in link</button>
<button type="submit" class="secondary" name="method" value="code">E-mail me a one-time code</button>
</fieldset>
</form>
${federation}
<div class="links"><a href="${interaction.path('abort')}">Cancel and return to the application</a></div>`;
}

/** Linking an identity to an existing account: its owner's password, nothing else. */
function linkView(
  interaction: Interaction,
  view: SignInView,
  link: { readonly email: string; readonly connectionName: string; readonly handle: string },
): Promise<LightResponse> {
  const errors = view.errors ?? [];
  const body = markup`<h1>Confirm it is your account</h1>
${errorSummary(errors)}
<p>An account for ${link.email} already exists here. Enter its password once to link it to ${link.connectionName}; after that, ${link.connectionName} signs you in.</p>
<form method="post" action="${interaction.path('link-identity')}" novalidate>
${interaction.csrfField()}
<input type="hidden" name="handle" value="${link.handle}">
<input type="hidden" name="email" value="${link.email}">
<input type="hidden" name="connection" value="${link.connectionName}">
<input type="text" name="username" autocomplete="username" value="${link.email}" hidden>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${errorsAttribute(errors)}>
<p class="hint"><a href="${interaction.path('forgot')}">Forgot your password?</a></p>
<button type="submit">Link and sign in</button>
</form>
<div class="links"><a href="${interaction.path()}">Use another way to sign in</a>
<a href="${interaction.path('abort')}">Cancel and return to the application</a></div>`;
  return interaction.brandedPage(view.status ?? 200, { title: 'Link your account', scripts: ['focus.js'] }, body);
}
