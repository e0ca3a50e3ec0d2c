import { type LightResponse, markup } from '@idt/core';
import { EmailSchema } from '@idt/identity';
import type { Interaction } from '../interaction.js';
import { notice } from '../pages.js';
import { afterFirstFactor } from '../pipeline.js';
import { codePage } from './one-time-code.js';
import { signInPage } from './sign-in-page.js';

/**
 * The sign-in e-mail step (`POST …/passwordless`): sends a magic link (back
 * to `…/link`) or a one-time code to the address, whether or not it has an
 * account (the pages say the same either way); a link and a code share one
 * counter per address.
 */
export async function requestSignInEmail(interaction: Interaction, form: URLSearchParams): Promise<LightResponse> {
  const { directory } = interaction.services;
  const rawEmail = (form.get('email') ?? '').trim();
  const email = EmailSchema.safeParse(rawEmail);
  if (!email.success) {
    return signInPage(interaction, {
      status: 400,
      email: rawEmail,
      errors: ['Enter a valid e-mail address to get a sign-in e-mail.'],
    });
  }
  try {
    if (form.get('method') === 'code') {
      await directory.requestCode(email.data);
      return codePage(interaction, email.data);
    }
    await directory.requestMagicLink(email.data, interaction.path('link'));
  } catch (error) {
    if ((error as { code?: string }).code === 'RateLimit.Exceeded') {
      return signInPage(interaction, {
        status: 429,
        email: rawEmail,
        errors: ['Too many sign-in e-mails for this address. Wait 15 minutes before asking again.'],
      });
    }
    throw error;
  }
  return interaction.brandedPage(
    200,
    { title: 'Check your e-mail' },
    markup`<h1>Check your e-mail</h1>
${notice(`If ${email.data} has an account, a sign-in link is on its way. It works for 15 minutes, in this browser.`)}
<div class="links"><a href="${interaction.path()}">Use another way to sign in</a></div>`,
  );
}

const LINK_TOKEN = /^[A-Za-z0-9_.-]{1,200}$/;

/**
 * The page a mailed sign-in link opens (`GET …/link?token=`): one button
 * that posts the token back. Opening it consumes nothing, so mail scanners
 * and link previews cannot use the link up; it works in the browser that
 * asked for it (the interaction's cookie).
 */
export function returnFromSignInLink(interaction: Interaction): Promise<LightResponse> {
  const token = interaction.request.url.searchParams.get('token') ?? '';
  if (!LINK_TOKEN.test(token)) {
    return signInPage(interaction, { status: 400, errors: ['That sign-in link did not work here. Ask for a new one.'] });
  }
  return linkPage(interaction, token);
}

/**
 * The sign-in link's confirmation (`POST …/link`): the link is consumed
 * (no session yet) and must have been mailed for this very sign-in; then
 * the sign-in pipeline takes over with `email`.
 */
export async function submitSignInLink(interaction: Interaction, form: URLSearchParams): Promise<LightResponse> {
  const token = form.get('token') ?? '';
  const consumed = LINK_TOKEN.test(token) ? await interaction.services.directory.consumeMagicLink(token) : undefined;
  if (!consumed || consumed.linkPath !== interaction.path('link')) {
    return signInPage(interaction, { status: 400, errors: ['That sign-in link did not work here. Ask for a new one.'] });
  }
  return afterFirstFactor(interaction, { userId: consumed.userId, amr: ['email'] });
}

function linkPage(interaction: Interaction, token: string): Promise<LightResponse> {
  return interaction.brandedPage(
    200,
    { title: 'Sign in' },
    markup`<h1>Sign in</h1>
<p>Continue to sign in with the link from your e-mail.</p>
<form method="post" action="${interaction.path('link')}">
${interaction.csrfField()}
<input type="hidden" name="token" value="${token}">
<button type="submit">Sign in</button>
</form>
<div class="links"><a href="${interaction.path()}">Use another way to sign in</a></div>`,
  );
}
