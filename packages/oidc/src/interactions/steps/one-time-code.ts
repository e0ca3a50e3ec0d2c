import { type LightResponse, markup } from '@idt/core';
import { EmailSchema } from '@idt/identity';
import type { Interaction } from '../interaction.js';
import { errorSummary, notice } from '../pages.js';
import { afterFirstFactor } from '../pipeline.js';
import { signInPage } from './sign-in-page.js';

/** The page asking for the six-digit code e-mailed to `email`. */
export function codePage(interaction: Interaction, email: string, errors: string[] = [], status = 200): Promise<LightResponse> {
  const body = markup`<h1>Enter your code</h1>
${errorSummary(errors)}${notice(errors.length ? undefined : `If ${email} has an account, a six-digit code is on its way. It works for 10 minutes.`)}
<form method="post" action="${interaction.path('code')}" novalidate>
${interaction.csrfField()}
<input type="hidden" name="email" value="${email}">
<label for="code">One-time code</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
<button type="submit">Sign in</button>
</form>
<div class="links"><a href="${interaction.path()}">Use another way to sign in</a></div>`;
  return interaction.brandedPage(status, { title: 'Enter your code', scripts: ['focus.js'] }, body);
}

/**
 * The one-time code step (`POST …/code`): a right code is consumed (no
 * session yet) and the sign-in pipeline takes over with `otp`.
 */
export async function submitCode(interaction: Interaction, form: URLSearchParams): Promise<LightResponse> {
  const email = EmailSchema.safeParse((form.get('email') ?? '').trim());
  const code = (form.get('code') ?? '').trim();
  if (!email.success) return signInPage(interaction, { status: 400, errors: ['Enter a valid e-mail address.'] });
  if (!/^\d{6}$/.test(code)) return codePage(interaction, email.data, ['Enter the six digits of the code.'], 400);
  const userId = await interaction.services.directory.consumeCode(email.data, code);
  if (!userId) return codePage(interaction, email.data, ['The code is wrong or has expired. Ask for a new one.'], 400);
  return afterFirstFactor(interaction, { userId, amr: ['otp'], email: email.data });
}
