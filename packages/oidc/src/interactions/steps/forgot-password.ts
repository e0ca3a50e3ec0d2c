import { type LightResponse, markup } from '@idt/core';
import { EmailSchema } from '@idt/identity';
import type { Interaction } from '../interaction.js';
import { errorSummary, notice } from '../pages.js';

/** What the forgotten-password form shows. */
interface ForgotPasswordView {
  readonly errors?: readonly string[];
  readonly email?: string;
  readonly status?: number;
}

/**
 * The forgotten-password form (`GET …/forgot`), reached from the sign-in
 * page's "Forgot your password?" link: one e-mail field, posted to the same
 * action.
 */
export function forgotPasswordPage(interaction: Interaction, view: ForgotPasswordView = {}): Promise<LightResponse> {
  const errors = view.errors ?? [];
  const loginHint = interaction.details.params.login_hint as string | undefined;
  const body = markup`<h1>Reset your password</h1>
${errorSummary(errors)}
<p>Enter the e-mail address of your account. We send a link to choose a new password; it works once, for one hour.</p>
<form method="post" action="${interaction.path('forgot')}" novalidate>
${interaction.csrfField()}
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${view.email ?? loginHint ?? ''}"${errors.length > 0 && markup` aria-describedby="error-summary"`}>
<button type="submit">E-mail me a reset link</button>
</form>
<div class="links"><a href="${interaction.path()}">Back to sign in</a></div>`;
  return interaction.brandedPage(view.status ?? 200, { title: 'Reset your password', scripts: ['focus.js'] }, body);
}

/**
 * The forgotten-password step (`POST …/forgot`): asks for a reset link and
 * answers the same page whether or not the address has an account (only an
 * active account gets mail). A limited address or client address gets the
 * form again with a message, whoever owns the address.
 */
export async function submitForgotPassword(interaction: Interaction, form: URLSearchParams): Promise<LightResponse> {
  const rawEmail = (form.get('email') ?? '').trim();
  const email = EmailSchema.safeParse(rawEmail);
  if (!email.success) {
    return forgotPasswordPage(interaction, { status: 400, email: rawEmail, errors: ['Enter a valid e-mail address.'] });
  }
  const ip = interaction.clientIp();
  try {
    await interaction.services.directory.requestPasswordReset(email.data, ip ? { ip } : {});
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'RateLimit.Exceeded') {
      return forgotPasswordPage(interaction, {
        status: 429,
        email: rawEmail,
        errors: ['Too many reset requests. Wait 15 minutes before asking again.'],
      });
    }
    if (code === 'PasswordReset.Unavailable') {
      return forgotPasswordPage(interaction, {
        status: 503,
        email: rawEmail,
        errors: ['This service sends no e-mail, so passwords cannot be reset here. Ask your administrator.'],
      });
    }
    throw error;
  }
  return interaction.brandedPage(
    200,
    { title: 'Check your e-mail' },
    markup`<h1>Check your e-mail</h1>
${notice(`If ${email.data} has an account, a link to choose a new password is on its way. It works once, for one hour.`)}
<p class="hint">No e-mail? Check the spam folder, or ask again in a few minutes.</p>
<div class="links"><a href="${interaction.path()}">Back to sign in</a></div>`,
  );
}
