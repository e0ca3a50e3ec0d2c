import { type LightResponse, markup } from '@idt/core';
import type { FederatedOutcome, FederationFailureReason } from '../../federation.js';
import { signInErrorPages } from '../error-pages.js';
import type { Interaction } from '../interaction.js';
import { recordSignInFailed, signInRequestFacts } from '../sign-in-audit.js';
import { signInPage } from './sign-in-page.js';

/**
 * The upstream round trip's return: the federation module's callback (OIDC)
 * or assertion consumer (SAML) checked the answer, provisioned or linked
 * the user and left an outcome bound to this interaction behind a handle;
 * this step takes it (once) and the sign-in pipeline goes on, or asks the
 * owner of an existing account for their password before linking, or says
 * which provider failed and what to try.
 */

/** The pipeline's continuation after a first factor (handed in by the dispatcher: a step never imports the pipeline). */
export type AfterFirstFactor = (
  interaction: Interaction,
  passed: { readonly userId: string; readonly amr: readonly string[]; readonly federated?: boolean },
) => Promise<LightResponse>;

const HANDLE = /^[A-Za-z0-9_-]{16,128}$/;

/** `GET …/federated?result=`: the outcome the callback left for this interaction. */
export async function returnFromFederation(interaction: Interaction, next: AfterFirstFactor): Promise<LightResponse> {
  const federation = interaction.services.federation();
  const handle = interaction.request.url.searchParams.get('result') ?? '';
  if (!federation || !HANDLE.test(handle)) {
    return federationFailedPage(interaction, { reason: 'expired', organizationName: null, connectionName: null });
  }
  return takeOutcome(interaction, await federation.consume(handle, interaction.details.uid), next);
}

/**
 * What the pipeline does with an outcome: a signed-in user goes on as
 * after any first factor (their local second factor and the organization's
 * gates still apply), a `link-required` one gets the password page, a
 * failure its page.
 */
export function takeOutcome(interaction: Interaction, outcome: FederatedOutcome, next: AfterFirstFactor): Promise<LightResponse> {
  if (outcome.kind === 'signed-in') return next(interaction, { userId: outcome.userId, amr: outcome.amr, federated: true });
  if (outcome.kind === 'link-required') return linkPage(interaction, outcome.email, outcome.connectionName, outcome.handle);
  return federationFailedPage(interaction, outcome);
}

/**
 * `POST …/link-identity`: the owner of the existing account proves it with
 * their password (under the address's lockout), then the federation module
 * links the identity to that account (it checks the account is the one the
 * identity's address names) and the sign-in goes on with both methods.
 */
export async function submitLinkIdentity(
  interaction: Interaction,
  form: URLSearchParams,
  next: AfterFirstFactor,
): Promise<LightResponse> {
  const { directory, signInLockout } = interaction.services;
  const federation = interaction.services.federation();
  const handle = form.get('handle') ?? '';
  const email = (form.get('email') ?? '').trim();
  const connectionName = (form.get('connection') ?? '').slice(0, 200);
  const password = form.get('password') ?? '';
  if (!federation || !HANDLE.test(handle) || email === '') {
    return federationFailedPage(interaction, { reason: 'expired', organizationName: null, connectionName: null });
  }
  if (password === '') return linkPage(interaction, email, connectionName, handle, ['Enter your password.'], 400);
  const attempt = await signInLockout.attempt(email, () => directory.verifyPassword(email, password));
  if (attempt.outcome === 'locked') {
    await recordSignInFailed(interaction, { reason: 'locked', detail: 'link' });
    return linkPage(
      interaction,
      email,
      connectionName,
      handle,
      ['Too many failed attempts for this address. Wait 15 minutes.'],
      429,
    );
  }
  if (attempt.outcome === 'wrong') {
    await recordSignInFailed(interaction, { reason: 'wrongPassword', detail: 'link' });
    return linkPage(interaction, email, connectionName, handle, ['The password is incorrect.'], 400);
  }
  const outcome = await federation.link(handle, interaction.details.uid, attempt.account, signInRequestFacts(interaction));
  if (outcome.kind !== 'signed-in') return takeOutcome(interaction, outcome, next);
  return next(interaction, { userId: outcome.userId, amr: ['pwd', ...outcome.amr], federated: true });
}

/** The page that asks the owner of an existing account for their password before linking. */
function linkPage(
  interaction: Interaction,
  email: string,
  connectionName: string,
  handle: string,
  errors: readonly string[] = [],
  status = 200,
): Promise<LightResponse> {
  return signInPage(interaction, {
    status,
    errors,
    link: { email, connectionName, handle },
  });
}

const WHAT_HAPPENED: Readonly<Record<FederationFailureReason, string>> = {
  denied: 'The sign-in was declined there.',
  unavailable: 'It did not answer in time, or could not be reached.',
  invalid: 'Its answer could not be accepted here.',
  expired: 'The sign-in took too long, or its answer was already used.',
  disabled: 'That sign-in option is switched off.',
  suspended: 'Your account or your membership here is suspended.',
  'no-email': 'It did not send an e-mail address for your account.',
};

const WHAT_TO_TRY: Readonly<Record<FederationFailureReason, string>> = {
  denied: 'If you meant to sign in, try again and accept. If you were refused access, ask your administrator.',
  unavailable: 'Wait a moment and try again. If it keeps failing, tell your administrator.',
  invalid: 'Try again. If it keeps failing, tell your administrator: the connection may need new settings.',
  expired: 'Start the sign-in again from the application.',
  disabled: 'Choose another way to sign in, or ask your administrator.',
  suspended: 'Ask an administrator of your organization to restore your access.',
  'no-email': 'Ask your administrator to release your e-mail address to this application.',
};

/**
 * The page of a failed upstream sign-in: which organization's provider
 * failed, what happened in plain words and what to try; never the
 * library's message (the module logged the detail). The failure is recorded
 * on the audit trail (`oidc.signIn.failed`, reason `federation`) unless the
 * federation module recorded it already (`audited`).
 */
export async function federationFailedPage(
  interaction: Interaction,
  failure: {
    readonly reason: FederationFailureReason;
    readonly organizationName: string | null;
    readonly connectionName: string | null;
    readonly audited?: boolean;
  },
): Promise<LightResponse> {
  if (!failure.audited) await recordSignInFailed(interaction, { reason: 'federation', detail: failure.reason });
  const provider = failure.organizationName
    ? `${failure.organizationName}’s identity provider${failure.connectionName ? ` (${failure.connectionName})` : ''}`
    : failure.connectionName
      ? failure.connectionName
      : 'your identity provider';
  const status =
    failure.reason === 'unavailable' ? 502 : failure.reason === 'suspended' || failure.reason === 'denied' ? 403 : 400;
  if (!WHAT_HAPPENED[failure.reason]) return signInErrorPages.failed(interaction.services.assets, interaction.formTargets);
  return interaction.brandedPage(
    status,
    { title: 'Sign-in problem' },
    markup`<h1>Could not sign you in with ${provider}</h1>
<p>${WHAT_HAPPENED[failure.reason]}</p>
<p class="hint">${WHAT_TO_TRY[failure.reason]}</p>
<div class="links"><a href="${interaction.path()}">Use another way to sign in</a>
<a href="${interaction.path('abort')}">Cancel and return to the application</a></div>`,
  );
}
