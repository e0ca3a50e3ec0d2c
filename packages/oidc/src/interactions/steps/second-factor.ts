import { type LightResponse, markup } from '@idt/core';
import type { SignInFailureReason } from '../../audit-actions.js';
import type { SecondFactorStatus } from '../directory.js';
import { signInErrorPages } from '../error-pages.js';
import type { Interaction } from '../interaction.js';
import { errorSummary } from '../pages.js';
import { type PendingSignIn, pendingSignIn } from '../pending.js';
import { recordSignInFailed } from '../sign-in-audit.js';
import { passkeySecondFactorSection } from './passkey-forms.js'; // D: passkeys

/** What the second-factor page shows besides its forms. */
interface SecondFactorView {
  readonly errors?: readonly string[];
  /** Which form the error belongs to (its field gets `aria-describedby`). */
  readonly method?: 'totp' | 'recovery';
  readonly status?: number;
}

const TOTP_CODE = /^\d{6}$/;
/** Recovery codes as shown (letters, digits, dashes), spaces removed; the service decides the rest. */
const RECOVERY_CODE = /^[A-Za-z0-9-]{6,64}$/;

/**
 * The second step of a sign-in (`second-factor`): a code from the user's
 * authenticator app (TOTP), a recovery code, or a passkey (its section,
 * from `passkey.ts`, when the user has one). `known`: the user's factors,
 * when the caller just read them.
 */
export async function secondFactorPage(
  interaction: Interaction,
  pending: PendingSignIn,
  view: SecondFactorView = {},
  known?: SecondFactorStatus,
): Promise<LightResponse> {
  const factors = known ?? (await interaction.services.directory.secondFactors(pending.userId));
  const errors = view.errors ?? [];
  // The field's hint, and the error summary when the error is this form's.
  const described = (hint: string, method: 'totp' | 'recovery') =>
    errors.length > 0 && view.method === method ? `${hint} error-summary` : hint;
  const passkeys = factors.passkeys > 0 ? await passkeySecondFactorSection(interaction, pending.userId) : markup``;
  const totpForm =
    factors.totp &&
    markup`<form method="post" action="${interaction.path('second-factor')}" novalidate>
${interaction.csrfField()}
<input type="hidden" name="method" value="totp">
<label for="code">Code from your authenticator app</label>
<p class="hint" id="code-hint">Open the app where you added this account and enter its 6-digit code.</p>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required aria-describedby="${described('code-hint', 'totp')}">
<button type="submit">Verify</button>
</form>`;
  const recoveryForm =
    (factors.totp || factors.recoveryCodesLeft > 0) &&
    markup`<details${view.method === 'recovery' && markup` open`}>
<summary>Use a recovery code</summary>
<form method="post" action="${interaction.path('second-factor')}" novalidate>
${interaction.csrfField()}
<input type="hidden" name="method" value="recovery">
<label for="recovery-code">Recovery code</label>
<p class="hint" id="recovery-hint">One of the codes you saved when you set up two-step verification. Each works once.</p>
<input id="recovery-code" name="code" type="text" autocomplete="off" autocapitalize="none" spellcheck="false" required aria-describedby="${described('recovery-hint', 'recovery')}">
<button type="submit" class="secondary">Use this recovery code</button>
</form>
</details>`;
  const body = markup`<h1>Two-step verification</h1>
${errorSummary(errors)}
${totpForm}
${passkeys}
${recoveryForm}
<div class="links"><a href="${interaction.path('abort')}">Cancel and return to the application</a></div>`;
  return interaction.brandedPage(
    view.status ?? 200,
    { title: 'Two-step verification', scripts: ['focus.js', 'passkey.js'] },
    body,
  );
}

/**
 * The second factor's form (`POST …/second-factor`): a TOTP code (six
 * digits; a code works once; 5 misses in 5 minutes lock the step for 5
 * minutes) or a recovery code (each works once). A right one goes on with
 * `otp` (`passed`: the pipeline's `completeSecondFactor`); anything else answers the page again with its message, and
 * changes nothing but the miss count.
 */
export async function submitSecondFactor(
  interaction: Interaction,
  form: URLSearchParams,
  passed: (interaction: Interaction, amr: readonly string[]) => Promise<LightResponse>,
): Promise<LightResponse> {
  const pending = pendingSignIn(interaction);
  if (pending?.step !== 'second-factor') {
    return signInErrorPages.expired(interaction.services.assets, interaction.formTargets);
  }
  const { directory } = interaction.services;
  const method = form.get('method') === 'recovery' ? 'recovery' : 'totp';
  const code = (form.get('code') ?? '').replace(/\s+/g, '');
  const again = (status: number, message: string) =>
    secondFactorPage(interaction, pending, { status, method, errors: [message] });
  // A refused code is recorded (its own small transaction), then the page answers.
  const refusedCode = async (reason: SignInFailureReason, status: number, message: string) => {
    await recordSignInFailed(interaction, { reason, userId: pending.userId, detail: method });
    return again(status, message);
  };
  if (method === 'recovery') {
    if (!RECOVERY_CODE.test(code)) return again(400, 'Enter one of your recovery codes as it was shown to you.');
    const outcome = await directory.useRecoveryCode(pending.userId, code);
    if (outcome === 'locked')
      return refusedCode('secondFactorLocked', 429, 'Too many wrong codes. Wait 5 minutes, then try again.');
    if (outcome === 'wrong') return refusedCode('wrongCode', 400, 'That recovery code is not right, or it was used already.');
    return passed(interaction, ['otp']);
  }
  if (!TOTP_CODE.test(code)) return again(400, 'Enter the 6 digits from your authenticator app.');
  const outcome = await directory.verifyTotp(pending.userId, code);
  if (outcome === 'locked')
    return refusedCode('secondFactorLocked', 429, 'Too many wrong codes. Wait 5 minutes, then try again.');
  if (outcome === 'replayed') {
    return refusedCode('replayedCode', 400, 'That code was used already. Wait for the next code in your app.');
  }
  if (outcome === 'wrong') {
    return refusedCode('wrongCode', 400, 'That code is not right. Check the code in your authenticator app and try again.');
  }
  return passed(interaction, ['otp']);
}
