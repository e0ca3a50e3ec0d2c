import { type LightResponse, markup } from '@idt/core';
import { EmailSchema } from '@idt/identity';
import type { Interaction } from '../interaction.js';
import { notice } from '../pages.js';
import { completeLogin } from './complete-login.js';
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

/**
 * The magic link's return (`GET …/link`): its verification (an API route)
 * started a session, set the session cookie and sent the browser back here.
 */
export async function returnFromSignInLink(interaction: Interaction): Promise<LightResponse> {
  const cookie = interaction.sessionCookie();
  const session = cookie ? await interaction.services.directory.findSession(cookie) : undefined;
  if (!session || !cookie) {
    return signInPage(interaction, { status: 400, errors: ['That sign-in link did not work here. Ask for a new one.'] });
  }
  // The link's verification already set the session cookie.
  return completeLogin(interaction, session, ['email']);
}
