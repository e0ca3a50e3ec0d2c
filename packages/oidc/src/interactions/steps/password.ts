import type { LightResponse } from '@idt/core';
import { EmailSchema } from '@idt/identity';
import type { Interaction } from '../interaction.js';
import { afterFirstFactor } from '../pipeline.js';
import { recordSignInFailed } from '../sign-in-audit.js';
import { ssoRequiredRefusal } from './home-realm.js';
import { signInPage } from './sign-in-page.js';

/**
 * The password step (`POST …/login`): checks the address and password
 * under the address's lockout (`policy/sign-in-lockout.ts`: it counts
 * failures only); the first factor (`pwd`) passed, the sign-in pipeline
 * takes over (`afterFirstFactor`: a second factor, the organization's policy,
 * then the session and the login).
 */
export async function submitPassword(interaction: Interaction, form: URLSearchParams): Promise<LightResponse> {
  const { directory, signInLockout } = interaction.services;
  const rawEmail = (form.get('email') ?? '').trim();
  const password = form.get('password') ?? '';
  const email = EmailSchema.safeParse(rawEmail);
  if (!email.success || password === '') {
    return signInPage(interaction, {
      status: 400,
      email: rawEmail,
      errors: [!email.success ? 'Enter a valid e-mail address.' : 'Enter your password.'],
    });
  }
  // An address its organization signs in with single sign-on only: refused before its password is tried.
  const refused = await ssoRequiredRefusal(interaction, email.data, null);
  if (refused) return refused;
  const attempt = await signInLockout.attempt(email.data, () => directory.verifyPassword(email.data, password));
  if (attempt.outcome === 'locked') {
    await recordSignInFailed(interaction, { reason: 'locked' });
    return signInPage(interaction, {
      status: 429,
      email: rawEmail,
      errors: ['Too many failed attempts for this address. Wait 15 minutes, or sign in with an e-mail link.'],
    });
  }
  if (attempt.outcome === 'wrong') {
    // Unknown address or wrong password: the page does not say which, nor does the trail (no actor, no address).
    await recordSignInFailed(interaction, { reason: 'wrongPassword' });
    return signInPage(interaction, { status: 400, email: rawEmail, errors: ['The e-mail address or password is incorrect.'] });
  }
  return afterFirstFactor(interaction, { userId: attempt.account, amr: ['pwd'], email: email.data, ssoRequiredChecked: true });
}
