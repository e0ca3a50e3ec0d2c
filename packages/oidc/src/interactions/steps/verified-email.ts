import { type LightResponse, markup } from '@idt/core';
import { signInErrorPages } from '../error-pages.js';
import type { Interaction } from '../interaction.js';
import { errorSummary, notice } from '../pages.js';

/**
 * Where the gate keeps the user it stopped, in the interaction's record
 * (oidc-provider's `Interaction`, under its `result`): the "send a new link"
 * form names nobody, so only a user who passed the first factor in this
 * interaction can ask for a link from it.
 */
export const VERIFY_EMAIL_KEY = 'idt_verify_email';

/** What the "verify your address" page shows besides its form. */
interface VerifyEmailView {
  readonly errors?: readonly string[];
  readonly notice?: string;
  readonly status?: number;
}

/**
 * The `verified-email` step of the sign-in pipeline: when the global
 * `IDT_REQUIRE_VERIFIED_EMAIL` setting (with `organizationId` `null`, right
 * after the first factor) or the organization's `requireVerifiedEmail` (once
 * the organization is decided) asks for a verified address and the user's is
 * not, the sign-in stops at the "verify your address" page, which offers a
 * new link (`POST …/resend-verification`). `undefined` lets the sign-in go on.
 *
 * @example
 * const gate = await verifiedEmailGate(interaction, userId, null);
 * if (gate) return gate;
 */
export async function verifiedEmailGate(
  interaction: Interaction,
  userId: string,
  organizationId: string | null,
): Promise<LightResponse | undefined> {
  if (!(await interaction.services.directory.needsEmailVerification(userId, organizationId))) return undefined;
  await rememberUser(interaction, userId);
  return verifyEmailPage(interaction, userId);
}

/**
 * `POST …/resend-verification`: mails the user the gate stopped a new
 * verification link (3 per address per 15 minutes), and shows the page
 * again with what happened.
 */
export async function submitResendVerification(interaction: Interaction, _form: URLSearchParams): Promise<LightResponse> {
  const userId = rememberedUser(interaction);
  if (!userId) return signInErrorPages.expired(interaction.services.assets, interaction.formTargets);
  const result = await interaction.services.directory.resendEmailVerification(userId);
  if (result.outcome === 'already-verified') {
    return verifyEmailPage(interaction, userId, {
      status: 200,
      notice: 'Your e-mail address is verified. Sign in again to continue.',
    });
  }
  if (result.outcome === 'rate-limited') {
    const minutes = Math.max(1, Math.ceil(result.retryAfterSeconds / 60));
    return verifyEmailPage(interaction, userId, {
      status: 429,
      errors: [
        `We sent several links in the last few minutes. Look for them in your inbox (and spam folder), or try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
      ],
    });
  }
  return verifyEmailPage(interaction, userId, {
    status: 200,
    notice: 'We sent you a new link. It works once, for 24 hours; earlier links no longer work.',
  });
}

/** The page: what to do, the "send a new link" form, and the ways on. */
async function verifyEmailPage(interaction: Interaction, userId: string, view: VerifyEmailView = {}): Promise<LightResponse> {
  const claims = await interaction.services.directory.accountClaims(userId, null);
  const address = claims?.email;
  const errors = view.errors ?? [];
  const body = markup`<h1>Verify your e-mail address</h1>
${errorSummary(errors)}${notice(view.notice)}
<p>Before you can sign in here, please confirm that ${address ? markup`<strong>${address}</strong>` : 'your e-mail address'} is yours. Open the link in the verification mail we sent you, then sign in again.</p>
<p class="hint" id="resend-hint">No mail, or the link expired? Ask for a new one. Each link works once, for 24 hours.</p>
<form method="post" action="${interaction.path('resend-verification')}">
${interaction.csrfField()}
<button type="submit" aria-describedby="resend-hint${errors.length > 0 ? ' error-summary' : ''}">Send a new link</button>
</form>
<div class="links"><a href="${interaction.path()}">I have verified my address: sign in again</a>
<a href="${interaction.path('abort')}">Cancel and return to the application</a></div>`;
  return interaction.brandedPage(view.status ?? 403, { title: 'Verify your e-mail address', scripts: ['focus.js'] }, body);
}

/** Keeps the stopped user in the interaction's record (and in the request's view of it). */
async function rememberUser(interaction: Interaction, userId: string): Promise<void> {
  const record = interaction.details as unknown as { result?: Record<string, unknown>; persist(): Promise<unknown> };
  record.result = { ...(record.result ?? {}), [VERIFY_EMAIL_KEY]: { userId } };
  await record.persist();
}

/** The user the gate stopped in this interaction, if it did. */
function rememberedUser(interaction: Interaction): string | undefined {
  const value = (interaction.details.result as Record<string, unknown> | undefined)?.[VERIFY_EMAIL_KEY] as
    | { userId?: unknown }
    | undefined;
  return typeof value?.userId === 'string' ? value.userId : undefined;
}
