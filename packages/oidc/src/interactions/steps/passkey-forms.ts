import { markup, type SafeHtml } from '@idt/core';
import type { Interaction } from '../interaction.js';

/**
 * The sign-in page's passkey form (progressive enhancement: hidden until
 * `passkey.js` finds WebAuthn in the browser). The script fetches the
 * options of `passkey-options`, asks the browser (conditional UI on the
 * e-mail field, or the button) and posts the assertion to `passkey`.
 */
export function passkeySignInForm(interaction: Interaction): SafeHtml {
  return markup`<form method="post" action="${interaction.path('passkey')}" class="passkey" data-passkey="sign-in" data-options="${interaction.path('passkey-options')}" hidden>
${interaction.csrfField()}
<input type="hidden" name="credential" value="">
<button type="submit" class="secondary">Sign in with a passkey</button>
<p class="hint" data-passkey-status role="status" aria-live="polite"></p>
</form>`;
}

/**
 * The passkey option of the second step (`second-factor.ts` shows it when
 * the user has a passkey): a button that asks the browser for one of the
 * user's passkeys and posts the assertion to `passkey-second-factor`.
 */
export async function passkeySecondFactorSection(interaction: Interaction, _userId: string): Promise<SafeHtml> {
  return markup`<form method="post" action="${interaction.path('passkey-second-factor')}" class="passkey" data-passkey="second-factor" data-options="${interaction.path('passkey-options')}?step=second-factor" hidden>
${interaction.csrfField()}
<input type="hidden" name="credential" value="">
<p class="hint">Confirm with a passkey of this account: your device’s screen lock or your security key.</p>
<button type="submit" class="secondary">Use a passkey</button>
<p class="hint" data-passkey-status role="status" aria-live="polite"></p>
</form>
<p class="hint" data-passkey-unsupported>This browser cannot use passkeys here.</p>`;
}
