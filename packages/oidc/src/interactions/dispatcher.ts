import { decodeUtf8Strict, type LightResponse, mediaTypeOf } from '@idt/core';
import type { StoredClient } from '../clients/store.js';
import { themeStylesheet } from './assets.js';
import { signInErrorPages } from './error-pages.js';
import { type Interaction, plainText } from './interaction.js';
import { safeParams } from './page-forms.js';
import { FormTooLarge, type PageRequest, readBodyBytes } from './page-request.js';
import {
  afterFirstFactor,
  completeSecondFactor,
  continueAfterEnrolment,
  loginPrompt,
  organizationGates,
  pendingPage,
} from './pipeline.js';
import { consentOrFinish, submitConsent } from './steps/consent.js';
import { returnFromFederation, submitLinkIdentity } from './steps/federated.js'; // federation
import { forgotPasswordPage, submitForgotPassword } from './steps/forgot-password.js';
import { FEDERATE_ACTION, FEDERATED_ACTION, IDENTIFY_ACTION, startFederation, submitIdentifier } from './steps/home-realm.js'; // federation
import { submitEnrolled, submitEnrolment } from './steps/mfa-enrolment.js';
import { submitCode } from './steps/one-time-code.js';
import { chooseOrganization, submittedOrganization } from './steps/organization.js';
import { passkeyOptions, submitPasskey, submitPasskeySecondFactor } from './steps/passkey.js'; // D: passkeys
import { submitPassword } from './steps/password.js';
import { submitSecondFactor } from './steps/second-factor.js';
import { requestSignInEmail, returnFromSignInLink, submitSignInLink } from './steps/sign-in-email.js';
import { submitResendVerification } from './steps/verified-email.js';

/** A step that answers a page of the interaction (`GET`). */
type PageStep = (interaction: Interaction) => Promise<LightResponse>;
/** A step of the login prompt that takes a form. */
type LoginFormStep = (interaction: Interaction, form: URLSearchParams) => Promise<LightResponse>;
/** A step of the consent prompt that takes a form: it works for the signed-in user on the request's client. */
type ConsentFormStep = (
  interaction: Interaction,
  client: StoredClient,
  userId: string,
  form: URLSearchParams,
) => Promise<LightResponse>;

/** The pages a browser opens, by action (the path segment after the interaction id). */
const PAGES: ReadonlyMap<string, PageStep> = new Map<string, PageStep>([
  ['', (interaction) => (interaction.details.prompt.name === 'login' ? loginPrompt(interaction) : consentPrompt(interaction))],
  ['theme.css', async (interaction) => themeStylesheet(await interaction.client())],
  ['abort', (interaction) => interaction.deny('The user cancelled the sign-in.')],
  ['link', returnFromSignInLink],
  ['forgot', (interaction) => forgotPasswordPage(interaction)], // A: passwords
  ['passkey-options', passkeyOptions], // D: passkeys
  [FEDERATE_ACTION, startFederation], // federation: a "Continue with …" button
  [FEDERATED_ACTION, (interaction) => returnFromFederation(interaction, afterFirstFactor)], // federation: the upstream's outcome
]);

/** The forms of the login prompt, by action. */
const LOGIN_FORMS: ReadonlyMap<string, LoginFormStep> = new Map<string, LoginFormStep>([
  ['login', submitPassword],
  ['passwordless', requestSignInEmail],
  ['code', submitCode],
  ['forgot', submitForgotPassword], // A: passwords
  ['passkey', submitPasskey], // D: passkeys
  ['link', submitSignInLink],
  [IDENTIFY_ACTION, submitIdentifier], // federation: identifier-first
  ['link-identity', (interaction, form) => submitLinkIdentity(interaction, form, afterFirstFactor)], // federation: linking
]);

/**
 * The forms of the sign-in pipeline's later steps, by action: they work in
 * either prompt (a sign-in, or a step-up the consent prompt's organization
 * asks) for the sign-in pending in the interaction (`pipeline.ts`).
 */
const PIPELINE_FORMS: ReadonlyMap<string, LoginFormStep> = new Map<string, LoginFormStep>([
  // The steps go on through the pipeline's continuations, handed in here: a step never imports the pipeline that shows it.
  ['second-factor', (interaction, form) => submitSecondFactor(interaction, form, completeSecondFactor)],
  ['passkey-second-factor', submitPasskeySecondFactor], // D: passkeys
  ['enrol', (interaction, form) => submitEnrolment(interaction, form, continueAfterEnrolment)],
  ['enrolled', (interaction) => submitEnrolled(interaction, continueAfterEnrolment)],
  ['resend-verification', submitResendVerification],
]);

/** The forms of the consent prompt, by action. */
const CONSENT_FORMS: ReadonlyMap<string, ConsentFormStep> = new Map<string, ConsentFormStep>([
  ['organization', submitOrganizationChoice],
  ['consent', submitGatedConsent],
]);

const MAX_FORM_BYTES = 16 * 1024;

/**
 * Decides which step answers a request to a pending interaction, from the
 * interaction's state (the prompt oidc-provider asks: `login` or `consent`)
 * and the action the request names, and runs it. Forms are read here, once,
 * and must carry the interaction's CSRF token; a form of the consent prompt
 * needs the request's client and the signed-in user.
 */
export async function dispatch(interaction: Interaction, action: string): Promise<LightResponse> {
  const { request, services } = interaction;
  if (request.method === 'GET') {
    const page = PAGES.get(action);
    if (page) return page(interaction);
  }
  if (request.method !== 'POST') return plainText(405, 'Method Not Allowed', { allow: 'GET, POST' });
  const form = await readSignInForm(request);
  if (form === 'too-large') return plainText(413, 'Content Too Large');
  if (form === 'unsafe') return signInErrorPages.unreadable(services.assets, interaction.formTargets);
  if (!interaction.csrfValid(form)) return signInErrorPages.formExpired(services.assets, interaction.formTargets);
  const pipelineStep = PIPELINE_FORMS.get(action);
  if (pipelineStep) return pipelineStep(interaction, form);
  const prompt = interaction.details.prompt.name;
  const loginStep = prompt === 'login' ? LOGIN_FORMS.get(action) : undefined;
  if (loginStep) return loginStep(interaction, form);
  const client = await interaction.client();
  const userId = interaction.details.session?.accountId;
  if (prompt !== 'consent' || !client || !userId) return signInErrorPages.expired(services.assets, interaction.formTargets);
  const consentStep = CONSENT_FORMS.get(action);
  if (consentStep) return consentStep(interaction, client, userId, form);
  return plainText(404, 'Not Found');
}

/**
 * The consent prompt's first page: the organization decided (or asked),
 * its gates (verified e-mail, `requireMfa`: `pipeline.ts`), then consent
 * asked or granted.
 */
async function consentPrompt(interaction: Interaction): Promise<LightResponse> {
  const client = await interaction.client();
  const userId = interaction.details.session?.accountId;
  if (!client || !userId) return signInErrorPages.expired(interaction.services.assets, interaction.formTargets);
  const pending = pendingPage(interaction);
  if (pending) return pending;
  const organization = await chooseOrganization(interaction, client, userId, undefined);
  if ('answer' in organization) return organization.answer;
  const gate = await organizationGates(interaction, userId, organization.organizationId);
  if (gate) return gate;
  return consentOrFinish(interaction, client, userId, organization.organizationId);
}

/** The organization choice (`POST …/organization`), then consent asked or granted. */
async function submitOrganizationChoice(
  interaction: Interaction,
  client: StoredClient,
  userId: string,
  form: URLSearchParams,
): Promise<LightResponse> {
  const chosen = await submittedOrganization(interaction, userId, form);
  if ('answer' in chosen) return chosen.answer;
  const organization = await chooseOrganization(interaction, client, userId, chosen.value);
  if ('answer' in organization) return organization.answer;
  const gate = await organizationGates(interaction, userId, organization.organizationId);
  if (gate) return gate;
  return consentOrFinish(interaction, client, userId, organization.organizationId);
}

/**
 * The consent decision (`POST …/consent`), after the gates of the
 * organization it names: a form posted straight to it must not skip them.
 */
async function submitGatedConsent(
  interaction: Interaction,
  client: StoredClient,
  userId: string,
  form: URLSearchParams,
): Promise<LightResponse> {
  if (form.get('decision') === 'approve') {
    const named = form.get('organization') ?? 'none';
    const organizationId = client.organizationId ?? (named === 'none' ? null : named);
    const gate = await organizationGates(interaction, userId, organizationId);
    if (gate) return gate;
  }
  return submitConsent(interaction, client, userId, form);
}

/**
 * Reads a sign-in form (any other media type reads as an empty form):
 * `too-large` past 16 KiB, `unsafe` when it is not valid UTF-8 or holds a NUL.
 */
async function readSignInForm(request: PageRequest): Promise<URLSearchParams | 'too-large' | 'unsafe'> {
  const type = mediaTypeOf(request.headers.get('content-type'));
  let bytes: Buffer;
  try {
    bytes = await readBodyBytes(request, MAX_FORM_BYTES);
  } catch (error) {
    if (error instanceof FormTooLarge) return 'too-large';
    throw error;
  }
  if (type !== 'application/x-www-form-urlencoded') return new URLSearchParams();
  const text = decodeUtf8Strict(bytes);
  if (text === undefined || !safeParams(text)) return 'unsafe';
  return new URLSearchParams(text);
}
