import { json, type LightResponse } from '@idt/core';
import { signInErrorPages } from '../error-pages.js';
import type { Interaction } from '../interaction.js';
import { pendingSignIn } from '../pending.js';
import { afterFirstFactor, completeSecondFactor } from '../pipeline.js';
import { recordSignInFailed } from '../sign-in-audit.js';
import { secondFactorPage } from './second-factor.js';
import { signInPage } from './sign-in-page.js';

/** The largest assertion (JSON) a form may carry; a browser's is about 1 KiB. */
const MAX_CREDENTIAL_CHARS = 12 * 1024;
const NO_STORE = { 'cache-control': 'no-store' } as const;

/** The assertion a passkey form carries (the browser's `credential.toJSON()`), or `undefined` when it is not JSON. */
export function credentialOf(form: URLSearchParams): unknown {
  const text = form.get('credential') ?? '';
  if (text === '' || text.length > MAX_CREDENTIAL_CHARS) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The methods a passkey adds to a sign-in that passed another factor (the pipeline adds `mfa` itself). */
function withoutMfa(amr: readonly string[]): string[] {
  return amr.filter((method) => method !== 'mfa');
}

/**
 * The options of a passkey request (`GET …/passkey-options`), as JSON for
 * `PublicKeyCredential.parseRequestOptionsFromJSON`: a discoverable request
 * on the sign-in page (no `allowCredentials`), or with
 * `?step=second-factor` the passkeys of the user waiting for their second
 * step. The challenge is bound to the interaction, works once and for 5
 * minutes; a newer request replaces it.
 */
export async function passkeyOptions(interaction: Interaction): Promise<LightResponse> {
  const { directory } = interaction.services;
  let userId: string | null = null;
  if (interaction.request.url.searchParams.get('step') === 'second-factor') {
    const pending = pendingSignIn(interaction);
    if (pending?.step !== 'second-factor') {
      return json(
        { error: 'expired', message: 'This sign-in has no second step waiting. Start again.' },
        { status: 409, headers: NO_STORE },
      );
    }
    userId = pending.userId;
  } else if (interaction.details.prompt.name !== 'login' || pendingSignIn(interaction)) {
    return json({ error: 'expired', message: 'This sign-in is past its first step.' }, { status: 409, headers: NO_STORE });
  }
  const options = await directory.passkeyRequestOptions(interaction.uid, userId);
  if (!options)
    return json({ error: 'unavailable', message: 'Passkeys are not available here.' }, { status: 404, headers: NO_STORE });
  return json(options, { headers: NO_STORE });
}

/**
 * The passkey as a first factor (`POST …/passkey`): the assertion the
 * browser made for the interaction's challenge. A verified passkey (user
 * verification required) stands for two factors: `hwk` or `swk`, and
 * `mfa`; the sign-in pipeline takes over. Anything else answers the sign-in
 * page with a message, changing nothing (the challenge is used up).
 */
export async function submitPasskey(interaction: Interaction, form: URLSearchParams): Promise<LightResponse> {
  const refused = (message: string) => signInPage(interaction, { status: 400, errors: [message] });
  const credential = credentialOf(form);
  if (credential === undefined) return refused('Your browser sent no passkey. Try again, or sign in with your password.');
  const outcome = await interaction.services.directory.verifyPasskey(interaction.uid, credential, null);
  if (outcome === 'expired') return refused('The passkey request expired or was already used. Try again.');
  if (outcome === 'rejected') {
    // The account is not known: a refused passkey names none.
    await recordSignInFailed(interaction, { reason: 'passkeyRefused', detail: 'firstFactor' });
    return refused('That passkey could not be used to sign in here. Try again, or sign in with your password.');
  }
  return afterFirstFactor(interaction, { userId: outcome.userId, amr: [...outcome.amr] });
}

/**
 * The passkey as a second factor (`POST …/passkey-second-factor`): only a
 * passkey of the user waiting for the second step passes (another user's
 * is refused); it goes on with `hwk` or `swk` (`completeSecondFactor` adds
 * `mfa`).
 */
export async function submitPasskeySecondFactor(interaction: Interaction, form: URLSearchParams): Promise<LightResponse> {
  const pending = pendingSignIn(interaction);
  if (pending?.step !== 'second-factor') return signInErrorPages.expired(interaction.services.assets, interaction.formTargets);
  const refused = (message: string) => secondFactorPage(interaction, pending, { status: 400, errors: [message] });
  const credential = credentialOf(form);
  if (credential === undefined) return refused('Your browser sent no passkey. Try again, or use a code.');
  const outcome = await interaction.services.directory.verifyPasskey(interaction.uid, credential, pending.userId);
  if (outcome === 'expired') return refused('The passkey request expired or was already used. Try again.');
  if (outcome === 'rejected') {
    await recordSignInFailed(interaction, { reason: 'passkeyRefused', userId: pending.userId, detail: 'secondFactor' });
    return refused('That passkey is not one of yours, or could not be used. Try again, or use a code.');
  }
  return completeSecondFactor(interaction, withoutMfa(outcome.amr));
}
