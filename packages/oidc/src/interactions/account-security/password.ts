import { LightResponse, type Logger, markup, silentLogger } from '@idt/core';
import type { TokenMac } from '@idt/identity';
import type { AccountDirectory } from '../directory.js';
import { methodNotAllowed } from '../page-forms.js';
import type { PageRequest } from '../page-request.js';
import { errorSummary, notice } from '../pages.js';
import { type AccountPageSession, createAccountPageGuard, redirectDone } from './page-guard.js';

/** The change-password page's path, relative to the deployment prefix. */
export const ACCOUNT_PASSWORD_PATH = '/connect/account/password';

/** What the change-password page needs of the account pages. */
export interface AccountPasswordPageOptions {
  readonly directory: Pick<AccountDirectory, 'findSession' | 'changePassword'>;
  /** The sign-in session cookie. */
  readonly sessionCookieName: string;
  /** HMAC tokens; the form's CSRF token is bound to the session (the account page's purpose). */
  readonly tokens: TokenMac;
  /** The deployment path prefix (`''` or `/idt`). */
  readonly pathPrefix: string;
  /** Whether `x-forwarded-for` names the client, for the audit record (`IDT_TRUST_PROXY`); false by default. */
  readonly trustProxy?: boolean;
  readonly logger?: Logger;
}

/** 32 KiB: room for an over-long password (typed twice) to reach the policy, which says so. */
const MAX_FORM_BYTES = 32 * 1024;

/**
 * The change-password page of the account pages, `GET|POST
 * /connect/account/password`: the current password, the new one twice, and
 * a CSRF token bound to the session. A change ends the user's other sessions
 * (this browser stays signed in) and redirects (303) to the page with a
 * notice; a wrong current password or a refused new one shows the form again
 * with the reason, changing nothing. Without a session it answers 401.
 *
 * @example
 * const passwordPage = createAccountPasswordPage({ directory, sessionCookieName, tokens, pathPrefix: '' });
 * if (action === 'password') return passwordPage(request);
 */
export function createAccountPasswordPage(options: AccountPasswordPageOptions): (request: PageRequest) => Promise<LightResponse> {
  const logger = options.logger ?? silentLogger;
  const account = `${options.pathPrefix}/connect/account`;
  const path = `${options.pathPrefix}${ACCOUNT_PASSWORD_PATH}`;
  const guard = createAccountPageGuard(options, { maxFormBytes: MAX_FORM_BYTES, page: { scripts: ['focus.js'] } });

  function form(session: AccountPageSession, view: { errors?: readonly string[]; notice?: string; status?: number } = {}) {
    const errors = view.errors ?? [];
    const described = errors.length > 0 ? 'new-password-hint error-summary' : 'new-password-hint';
    return guard.page(
      view.status ?? 200,
      'Change your password',
      markup`<h1>Change your password</h1>
${errorSummary(errors)}${notice(view.notice)}
<form method="post" action="${path}" novalidate>
${guard.csrfField(session)}
<label for="current-password">Current password</label>
<input id="current-password" name="currentPassword" type="password" autocomplete="current-password" required>
<label for="new-password">New password</label>
<p class="hint" id="new-password-hint">At least 12 characters. A few unrelated words make a strong password that is easy to remember; common passwords and your name are refused.</p>
<input id="new-password" name="newPassword" type="password" autocomplete="new-password" required aria-describedby="${described}">
<label for="confirm-password">Repeat the new password</label>
<input id="confirm-password" name="confirmPassword" type="password" autocomplete="new-password" required>
<button type="submit">Change password</button>
</form>
<p class="hint">Your other sessions end when the password changes; this browser stays signed in.</p>
<div class="links"><a href="${account}">Back to your account</a></div>`,
    );
  }

  async function answer(request: PageRequest): Promise<LightResponse> {
    const session = await guard.session(request);
    if (!session) return guard.signedOut('Sign in to change your password');
    if (request.method === 'GET' || request.method === 'HEAD') {
      const done = request.url.searchParams.get('done') === 'changed';
      return form(session, done ? { notice: 'Your password is changed. Your other sessions were signed out.' } : {});
    }
    if (request.method !== 'POST') return methodNotAllowed('GET, HEAD, POST');
    const fields = await guard.readForm(request, session);
    if (fields instanceof LightResponse) return fields;
    const current = fields.get('currentPassword') ?? '';
    const next = fields.get('newPassword') ?? '';
    const errors = [
      ...(current ? [] : ['Enter your current password.']),
      ...(next ? [] : ['Enter a new password.']),
      ...(next && next !== (fields.get('confirmPassword') ?? '') ? ['The two new passwords are not the same.'] : []),
    ];
    if (errors.length) return form(session, { errors, status: 400 });
    const outcome = await options.directory.changePassword(
      session.userId,
      session.sessionId,
      current,
      next,
      guard.requestFacts(request),
    );
    switch (outcome.outcome) {
      case 'set':
        logger.info('account: password changed by its user', { userId: session.userId });
        return redirectDone(path, 'changed');
      case 'rejected':
        return form(session, { errors: outcome.reasons, status: 422 });
      case 'rate-limited':
        return form(session, { errors: ['Too many attempts. Wait 15 minutes and try again.'], status: 429 });
      default:
        return form(session, { errors: ['The current password is wrong.'], status: 400 });
    }
  }

  return answer;
}
