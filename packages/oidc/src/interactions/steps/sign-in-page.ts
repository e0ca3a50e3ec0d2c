import { type LightResponse, markup } from '@idt/core';
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
}

/**
 * The first page of a sign-in (the login prompt): the password form and the
 * sign-in e-mail form (magic link or one-time code), and a way back. Every
 * way in that fails comes back here with its message.
 */
export function signInPage(interaction: Interaction, view: SignInView = {}): Promise<LightResponse> {
  const errors = view.errors ?? [];
  const loginHint = interaction.details.params.login_hint as string | undefined;
  const body = markup`<h1>Sign in</h1>
${errorSummary(errors)}${notice(view.notice)}
<form method="post" action="${interaction.path('login')}" novalidate>
${interaction.csrfField()}
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" autocomplete="username webauthn" required value="${view.email ?? loginHint ?? ''}"${errors.length > 0 && markup` aria-describedby="error-summary"`}>
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
<div class="links"><a href="${interaction.path('abort')}">Cancel and return to the application</a></div>`;
  return interaction.brandedPage(view.status ?? 200, { title: 'Sign in', scripts: ['focus.js', 'passkey.js'] }, body);
}
