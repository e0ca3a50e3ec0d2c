import type { LightResponse } from '@idt/core';
import { AMR_MFA, acrOf, asksMfa, MFA_ACR_CHECK, mergeAmr } from '../policy/authentication-context.js';
import { decideOrganization, type OrganizationDecision } from '../policy/organization.js';
import type { SecondFactorStatus } from './directory.js';
import { signInErrorPages } from './error-pages.js';
import type { Interaction } from './interaction.js';
import { type PendingSignIn, pendingSignIn, savePending } from './pending.js';
import { signInSucceededEntry } from './sign-in-audit.js';
import { completeLogin, reuseOrStartSession } from './steps/complete-login.js';
import { takeOutcome } from './steps/federated.js';
import { routeByHint, ssoRequiredRefusal } from './steps/home-realm.js';
import { enrolledPage, enrolmentPage } from './steps/mfa-enrolment.js';
import { secondFactorPage } from './steps/second-factor.js';
import { signInPage } from './steps/sign-in-page.js';
import { verifiedEmailGate } from './steps/verified-email.js';

/**
 * The steps of a sign-in, in the order the pipeline runs them. Each is a
 * file under `steps/` with its page:
 *
 * - `identify`: the sign-in page (`sign-in-page.ts`) and its first factors:
 *   `password` (`password.ts`), a mailed one-time code or link
 *   (`one-time-code.ts`, `sign-in-email.ts`), a `passkey` (`passkey.ts`);
 *   with federation, the routing step (`home-realm.ts`: identifier-first,
 *   hints, "Continue with …", `ssoRequired`) and the upstream round trip's
 *   return (`federated.ts`, linking included);
 * - `verified-email`: the address must be verified (`verified-email.ts`),
 *   globally or by the organization's policy;
 * - `second-factor`: a TOTP code, a recovery code or a passkey
 *   (`second-factor.ts`), when the user has one or the client asks the MFA `acr`;
 * - `enrolment`: TOTP enrolment (`mfa-enrolment.ts`), when the
 *   organization requires MFA (or the client asks it) of a user without a second factor;
 * - `organization`: the grant's organization (`organization.ts`);
 * - `consent` (`consent.ts`).
 */
export type SignInStep =
  | 'identify'
  | 'password'
  | 'passkey'
  | 'verified-email'
  | 'second-factor'
  | 'enrolment'
  | 'organization'
  | 'consent';

/**
 * The first page of the login prompt: the step a pending sign-in waits for;
 * inside a single sign-on session whose only missing piece is the MFA
 * `acr` a client asks, the second step for the session's account; else the
 * sign-in page.
 */
export async function loginPrompt(interaction: Interaction): Promise<LightResponse> {
  const pending = pendingSignIn(interaction);
  if (pending) return stepPage(interaction, pending);
  const stepUp = await stepUpInSession(interaction);
  if (stepUp) return stepUp;
  const federation = interaction.services.federation();
  if (federation) {
    const unsolicited = await federation.consumeUnsolicited(interaction.request.headers.get('cookie'));
    if (unsolicited) return takeOutcome(interaction, unsolicited, afterFirstFactor);
    const routed = await routeByHint(interaction);
    if (routed) return routed;
  }
  return signInPage(interaction);
}

/** A first factor that passed: the user it identified and its methods. */
export interface FirstFactorPassed {
  readonly userId: string;
  readonly amr: readonly string[];
  /** The address the person typed, when they typed one (the `ssoRequired` rule reads it). */
  readonly email?: string;
  /** Signed in at another identity provider (`federated.ts`): the `ssoRequired` rule is met. */
  readonly federated?: boolean;
  /** The step applied the `ssoRequired` rule to `email` already (the password step does, before trying the password). */
  readonly ssoRequiredChecked?: boolean;
}

/**
 * Every first factor (password, one-time code, magic link, passkey, a
 * sign-in at another provider) ends here with the user it identified and
 * its methods: the `ssoRequired` rule of the user's domain (all but a
 * federated sign-in), the verified-e-mail gate, then the second factor
 * when one is needed, then the organization's policy, then the session and
 * the login.
 */
export async function afterFirstFactor(interaction: Interaction, passed: FirstFactorPassed): Promise<LightResponse> {
  if (!passed.federated && !passed.ssoRequiredChecked && interaction.services.federation()) {
    const email = passed.email ?? (await interaction.services.directory.accountClaims(passed.userId, null))?.email;
    const refused = await ssoRequiredRefusal(interaction, email, passed.userId);
    if (refused) return refused;
  }
  const gate = await verifiedEmailGate(interaction, passed.userId, null);
  if (gate) return gate;
  return continueSignIn(interaction, {
    userId: passed.userId,
    amr: [...passed.amr],
    step: 'second-factor',
    prompt: 'login',
    organizationId: null,
  });
}

/**
 * A second factor passed (a TOTP or recovery code, a passkey): its methods join the first's,
 * with `mfa`, and the sign-in goes on. Without a sign-in waiting for its
 * second factor (it expired, or the form was replayed) the answer is the
 * expired page.
 */
export async function completeSecondFactor(interaction: Interaction, amr: readonly string[]): Promise<LightResponse> {
  const pending = pendingSignIn(interaction);
  if (pending?.step !== 'second-factor') return signInErrorPages.expired(interaction.services.assets, interaction.formTargets);
  return continueSignIn(interaction, { ...pending, amr: mergeAmr(pending.amr, [...amr, AMR_MFA]) });
}

/** After the enrolment's recovery codes were shown: the sign-in goes on. */
export async function continueAfterEnrolment(interaction: Interaction): Promise<LightResponse> {
  const pending = pendingSignIn(interaction);
  if (pending?.step !== 'enrolled') return signInErrorPages.expired(interaction.services.assets, interaction.formTargets);
  return continueSignIn(interaction, pending);
}

/**
 * The organization's gates, once the consent prompt decided the grant's
 * organization for a signed-in user: its verified-e-mail policy, then its
 * `requireMfa` (the second step for a session without `mfa`; enrolment for
 * a user without a second factor). `undefined` lets consent follow.
 */
export async function organizationGates(
  interaction: Interaction,
  userId: string,
  organizationId: string | null,
): Promise<LightResponse | undefined> {
  // Without an organization only the deployment's own verified-e-mail rule applies (a single
  // sign-on session may be older than the rule).
  if (organizationId === null) return verifiedEmailGate(interaction, userId, null);
  const session = interaction.details.session as { amr?: string[] } | undefined;
  return organizationGate(interaction, {
    userId,
    amr: session?.amr ?? [],
    step: 'second-factor',
    prompt: 'consent',
    organizationId,
  });
}

/** The page of the step this interaction's pending sign-in waits for; `undefined` when none waits. */
export function pendingPage(interaction: Interaction): Promise<LightResponse> | undefined {
  const pending = pendingSignIn(interaction);
  return pending ? stepPage(interaction, pending) : undefined;
}

/** The page of the step a pending sign-in waits for (`factors`: the user's, when just read). */
function stepPage(interaction: Interaction, pending: PendingSignIn, factors?: SecondFactorStatus): Promise<LightResponse> {
  if (pending.step === 'second-factor') return secondFactorPage(interaction, pending, {}, factors);
  if (pending.step === 'enrolled') return enrolledPage(interaction, null);
  return enrolmentPage(interaction, pending);
}

/** Saves the sign-in as waiting for `step` and shows that step's page. */
async function enterStep(interaction: Interaction, pending: PendingSignIn, factors?: SecondFactorStatus): Promise<LightResponse> {
  await savePending(interaction, pending);
  return stepPage(interaction, pending, factors);
}

/** The second step a sign-in without `mfa` needs, if any: a second factor the user has, or enrolment. */
async function secondStep(interaction: Interaction, state: PendingSignIn, required: boolean): Promise<LightResponse | undefined> {
  if (state.amr.includes(AMR_MFA)) return undefined;
  const factors = await interaction.services.directory.secondFactors(state.userId);
  if (factors.totp || factors.passkeys > 0) return enterStep(interaction, { ...state, step: 'second-factor' }, factors);
  if (required) return enterStep(interaction, { ...state, step: 'enrolment' });
  return undefined;
}

/** The sign-in's next step after its factors so far: a second step, the organization's gates, the login. */
async function continueSignIn(interaction: Interaction, state: PendingSignIn): Promise<LightResponse> {
  const second = await secondStep(interaction, state, asksMfa(interaction.details.params));
  if (second) return second;
  if (state.prompt === 'consent') {
    const gate = await organizationGate(interaction, state);
    return gate ?? finishStepUp(interaction, state);
  }
  return finishLogin(interaction, state);
}

/** An organization's verified-e-mail and `requireMfa` gates for the sign-in. */
async function organizationGate(interaction: Interaction, state: PendingSignIn): Promise<LightResponse | undefined> {
  const { organizationId } = state;
  if (organizationId === null) return undefined;
  const gate = await verifiedEmailGate(interaction, state.userId, organizationId);
  if (gate) return gate;
  if (state.amr.includes(AMR_MFA)) return undefined;
  if (!(await interaction.services.directory.organizationRequiresMfa(organizationId))) return undefined;
  return secondStep(interaction, state, true);
}

/**
 * The end of a login: the organization decided now when it can be (the
 * gates of its policy apply before the session starts), then the identity
 * session started (or the account's kept, marked re-authenticated), the
 * sign-in recorded on the audit trail and the login completed.
 */
async function finishLogin(interaction: Interaction, state: PendingSignIn): Promise<LightResponse> {
  const { services, details } = interaction;
  const client = await interaction.client();
  let decision: OrganizationDecision | undefined;
  if (client) {
    decision = await decideOrganization(
      client,
      state.userId,
      details.params.organization as string | undefined,
      services.directory,
    );
    if (decision.kind === 'organization' && decision.organizationId !== null) {
      const gate = await organizationGate(interaction, { ...state, organizationId: decision.organizationId });
      if (gate) return gate;
    }
  }
  const now = services.clock.now();
  // The sign-in's audit record is written in the transaction that starts (or re-authenticates) the session.
  const entry = await signInSucceededEntry(interaction, {
    userId: state.userId,
    amr: state.amr,
    organizationId: decision?.kind === 'organization' ? decision.organizationId : null,
  });
  const session = await reuseOrStartSession(interaction, state.userId, [...state.amr], (sessionId) =>
    entry(sessionId, 'started'),
  );
  if (session.reused) {
    await services.directory.markAuthenticated(session.sessionId, [...state.amr], now, [
      entry(session.sessionId, 'reauthenticated'),
    ]);
  }
  interaction.setSessionCookie(session);
  return completeLogin(interaction, session, { amr: [...state.amr], acr: acrOf(state.amr), at: now }, decision);
}

/**
 * The end of a step-up in the consent prompt: the session is kept (its
 * cookie must still name it), marked re-authenticated, and the login is
 * recorded again with the new methods; the provider then asks consent
 * again, where the organization's gates now pass.
 */
async function finishStepUp(interaction: Interaction, state: PendingSignIn): Promise<LightResponse> {
  const { services } = interaction;
  const cookie = interaction.sessionCookie();
  const current = cookie ? await services.directory.findSession(cookie) : undefined;
  if (!current || current.userId !== state.userId) {
    return signInErrorPages.expired(services.assets, interaction.formTargets);
  }
  const now = services.clock.now();
  const amr = [...state.amr];
  const entry = await signInSucceededEntry(interaction, { userId: state.userId, amr, organizationId: state.organizationId });
  await services.directory.markAuthenticated(current.sessionId, amr, now, [entry(current.sessionId, 'stepUp')]);
  return interaction.finish(
    {
      login: { accountId: state.userId, amr, acr: acrOf(amr), ts: Math.floor(now.getTime() / 1000), remember: true },
      idt: { sessionId: current.sessionId },
    },
    false,
  );
}

/**
 * A login prompt inside a single sign-on session that asks only the MFA
 * `acr` (no `max_age`, `prompt=login` or other subject): the session's
 * account goes straight to its second step, when the identity session its
 * cookie names is still the account's. `undefined` signs in from the start.
 */
async function stepUpInSession(interaction: Interaction): Promise<LightResponse | undefined> {
  const { details, services } = interaction;
  const session = details.session as { accountId?: string; amr?: string[] } | undefined;
  const reasons = details.prompt.reasons;
  if (!session?.accountId || reasons.length === 0 || !reasons.every((reason) => reason === MFA_ACR_CHECK)) return undefined;
  const cookie = interaction.sessionCookie();
  const current = cookie ? await services.directory.findSession(cookie) : undefined;
  if (!current || current.userId !== session.accountId) return undefined;
  const state: PendingSignIn = {
    userId: session.accountId,
    amr: (session.amr ?? []).filter((method) => method !== AMR_MFA),
    step: 'second-factor',
    prompt: 'login',
    organizationId: null,
  };
  return secondStep(interaction, state, true);
}
