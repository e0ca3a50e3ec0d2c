import { type LightResponse, markup } from '@idt/core';
import { AMR_MFA, mergeAmr } from '../../policy/authentication-context.js';
import { signInErrorPages } from '../error-pages.js';
import type { Interaction } from '../interaction.js';
import { errorSummary, notice } from '../pages.js';
import { type PendingSignIn, pendingSignIn, savePending } from '../pending.js';
import { signInRequestFacts } from '../sign-in-audit.js';
import { totpEnrolmentView } from '../totp-enrolment-view.js';

const TOTP_CODE = /^\d{6}$/;

/** Why the enrolment step is asked: the organization's policy, or the client's `acr_values`. */
function reason(pending: PendingSignIn): string {
  return pending.organizationId
    ? 'Your organization requires two-step verification. Set it up to continue.'
    : 'This application asks for two-step verification. Set it up to continue.';
}

/**
 * The enrolment step (`enrolment`): a user without a second factor whose
 * organization requires MFA (`requireMfa`), or whose client asks the MFA
 * `acr`, adds an authenticator app (TOTP) before the sign-in goes on. Each
 * visit begins a new enrolment (a new secret and QR code); the pending
 * sign-in keeps which one the form confirms.
 */
export async function enrolmentPage(interaction: Interaction, pending: PendingSignIn): Promise<LightResponse> {
  const { directory } = interaction.services;
  const claims = await directory.accountClaims(pending.userId, null);
  if (!claims) return signInErrorPages.expired(interaction.services.assets, interaction.formTargets);
  const enrolment = await directory.beginTotp(pending.userId, claims.email ?? pending.userId);
  await savePending(interaction, { ...pending, step: 'enrolment', enrolmentId: enrolment.enrolmentId });
  const body = markup`<h1>Set up two-step verification</h1>
${notice(reason(pending))}
${totpEnrolmentView({ enrolment, action: interaction.path('enrol'), hidden: interaction.csrfField() })}
<div class="links"><a href="${interaction.path('abort')}">Cancel and return to the application</a></div>`;
  return interaction.brandedPage(200, { title: 'Set up two-step verification', scripts: ['focus.js'] }, body);
}

/** The form confirming an enrolment with the app's first code (again, after a miss: the app already holds the key). */
function confirmForm(interaction: Interaction, errors: readonly string[]) {
  return markup`<form method="post" action="${interaction.path('enrol')}" novalidate>
${interaction.csrfField()}
<label for="totp-code">6-digit code from the app</label>
<input id="totp-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="7" required${errors.length > 0 && markup` aria-describedby="error-summary"`}>
<button type="submit">Turn on two-step verification</button>
</form>`;
}

/**
 * The enrolment's confirmation (`POST …/enrol`): the app's first code
 * confirms the enrolment; the recovery codes are shown once, and the
 * sign-in goes on with `otp` and `mfa` (`next`: the pipeline's
 * `continueAfterEnrolment`). A wrong or malformed code answers
 * the form again (the app already holds the key; a new QR code is a link away).
 */
export async function submitEnrolment(
  interaction: Interaction,
  form: URLSearchParams,
  next: (interaction: Interaction) => Promise<LightResponse>,
): Promise<LightResponse> {
  const pending = pendingSignIn(interaction);
  if (pending?.step !== 'enrolment' || !pending.enrolmentId) {
    return signInErrorPages.expired(interaction.services.assets, interaction.formTargets);
  }
  const code = (form.get('code') ?? '').replace(/\s+/g, '');
  if (!TOTP_CODE.test(code)) return retryPage(interaction, 'Enter the 6 digits from your authenticator app.');
  const confirmed = await interaction.services.directory.confirmTotp(
    pending.userId,
    pending.enrolmentId,
    code,
    signInRequestFacts(interaction),
  );
  if (confirmed === 'wrong') {
    return retryPage(interaction, 'That code did not match. Enter the current code from the app where you added this account.');
  }
  if (confirmed === 'locked') return retryPage(interaction, 'Too many wrong codes. Wait 5 minutes, then try again.', 429);
  if (confirmed === 'expired') {
    return retryPage(interaction, 'This set-up has expired. Show a new QR code and add the account to your app again.');
  }
  const { enrolmentId: _done, ...rest } = pending;
  await savePending(interaction, { ...rest, step: 'enrolled', amr: mergeAmr(pending.amr, ['otp', AMR_MFA]) });
  if (!confirmed.recoveryCodes?.length) return next(interaction);
  return enrolledPage(interaction, confirmed.recoveryCodes);
}

/** The enrolment form again, with its error and a way to a new QR code. */
function retryPage(interaction: Interaction, message: string, status = 400): Promise<LightResponse> {
  const errors = [message];
  const body = markup`<h1>Set up two-step verification</h1>
${errorSummary(errors)}
${confirmForm(interaction, errors)}
<div class="links"><a href="${interaction.path()}">Show a new QR code</a><a href="${interaction.path('abort')}">Cancel and return to the application</a></div>`;
  return interaction.brandedPage(status, { title: 'Set up two-step verification', scripts: ['focus.js'] }, body);
}

/**
 * The end of the enrolment: the recovery codes, shown this once (`null`
 * on a later visit: they are not kept readable), and a button that goes on
 * with the sign-in (`POST …/enrolled`).
 */
export function enrolledPage(interaction: Interaction, recoveryCodes: readonly string[] | null): Promise<LightResponse> {
  const codes = recoveryCodes
    ? markup`<p>Save these recovery codes somewhere safe. Each one signs you in once if you lose your phone. They are shown only now.</p>
<ul class="codes">${recoveryCodes.map((code) => markup`<li><code>${code}</code></li>`)}</ul>`
    : markup`<p class="hint">Your recovery codes were shown once. You can make new ones from your account.</p>`;
  const body = markup`<h1>Two-step verification is on</h1>
${codes}
<form method="post" action="${interaction.path('enrolled')}">
${interaction.csrfField()}
<button type="submit">Continue</button>
</form>`;
  return interaction.brandedPage(200, { title: 'Two-step verification is on' }, body);
}

/**
 * The enrolment's last page submitted (`POST …/enrolled`): the sign-in goes
 * on (`next`: the pipeline's `continueAfterEnrolment`, as for
 * {@link submitEnrolment}).
 */
export function submitEnrolled(
  interaction: Interaction,
  next: (interaction: Interaction) => Promise<LightResponse>,
): Promise<LightResponse> {
  return next(interaction);
}
