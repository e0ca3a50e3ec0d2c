import {
  DATABASE_RETRY_AFTER_SECONDS,
  isDatabaseUnavailable,
  LightResponse,
  type Logger,
  markup,
  type SafeHtml,
  silentLogger,
} from '@idt/core';
import { pageSecurityHeaders } from '../policy/security-headers.js';
import type { AccountDirectory } from './directory.js';
import { methodNotAllowed, PageFormRefused, postedFromThisSite, readPageForm } from './page-forms.js';
import type { PageHandler, PageRequest } from './page-request.js';
import { pageRequestFacts } from './page-request-facts.js';
import { errorSummary, notice, renderPage, renderUnavailablePage } from './pages.js';

/** The reset page's path, relative to the deployment prefix (the mailed links point here). */
export const PASSWORD_RESET_PATH = '/connect/password-reset';

/** Options of {@link createPasswordResetPage}. */
export interface PasswordResetPageOptions {
  readonly directory: Pick<AccountDirectory, 'passwordResetState' | 'resetPassword'>;
  /** The deployment path prefix (`''` or `/idt`). */
  readonly pathPrefix: string;
  /** Whether `x-forwarded-for` names the client, for the audit record (`IDT_TRUST_PROXY`); false by default. */
  readonly trustProxy?: boolean;
  readonly logger?: Logger;
}

/** 32 KiB: room for an over-long password (typed twice) to reach the policy, which says so. */
const MAX_FORM_BYTES = 32 * 1024;
const PAGE_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'text/html; charset=utf-8', ...pageSecurityHeaders() };

/**
 * The password reset page at `{prefix}/connect/password-reset`, outside any
 * sign-in: the mailed link opens it with `?token=`; it shows a form for the
 * new password (the token in a hidden field) when the link still works, and
 * uses the link only on a valid POST. A refused password shows the policy's
 * reasons and keeps the link working. Returns a page handler that declines
 * every other path.
 *
 * @example
 * const resetPage = createPasswordResetPage({ directory, pathPrefix: '' });
 */
export function createPasswordResetPage(options: PasswordResetPageOptions): PageHandler {
  const logger = options.logger ?? silentLogger;
  const path = `${options.pathPrefix}${PASSWORD_RESET_PATH}`;
  const assets = `${options.pathPrefix}/connect/assets`;

  const page = (status: number, title: string, body: SafeHtml) =>
    new LightResponse(renderPage({ title, assets, scripts: ['focus.js'] }, body), { status, headers: PAGE_HEADERS });

  const linkProblem = (status: number, state: 'expired' | 'invalid') =>
    page(
      status,
      state === 'expired' ? 'This link has expired' : 'This link does not work',
      markup`<h1>${state === 'expired' ? 'This link has expired' : 'This link does not work'}</h1>
<p>${
        state === 'expired'
          ? 'Reset links work for one hour. Ask for a new one from the sign-in page ("Forgot your password?").'
          : 'The link is incomplete, was replaced by a newer one, or was already used. Ask for a new one from the sign-in page ("Forgot your password?").'
      }</p>`,
    );

  const form = (token: string, errors: readonly string[] = [], status = 200) =>
    page(
      status,
      'Choose a new password',
      markup`<h1>Choose a new password</h1>
${errorSummary(errors)}
<form method="post" action="${path}" novalidate>
<input type="hidden" name="token" value="${token}">
<label for="password">New password</label>
<p class="hint" id="password-hint">At least 12 characters. A few unrelated words make a strong password that is easy to remember; common passwords and your name are refused.</p>
<input id="password" name="password" type="password" autocomplete="new-password" required aria-describedby="password-hint${errors.length > 0 ? ' error-summary' : ''}">
<label for="confirm">Repeat the new password</label>
<input id="confirm" name="confirm" type="password" autocomplete="new-password" required>
<button type="submit">Set the new password</button>
</form>
<p class="hint">Every session of your account ends: sign in again everywhere with the new password.</p>`,
    );

  async function answer(request: PageRequest): Promise<LightResponse> {
    if (request.method === 'GET' || request.method === 'HEAD') {
      const token = request.url.searchParams.get('token') ?? '';
      if (!token || token.length > 512) return linkProblem(400, 'invalid');
      const state = await options.directory.passwordResetState(token);
      return state === 'valid' ? form(token) : linkProblem(400, state);
    }
    if (request.method !== 'POST') return methodNotAllowed('GET, HEAD, POST');
    if (!postedFromThisSite(request)) {
      return page(
        403,
        'This form does not work here',
        markup`<h1>This form does not work here</h1><p>Nothing was changed. Open the link from your e-mail again.</p>`,
      );
    }
    let fields: URLSearchParams;
    try {
      fields = await readPageForm(request, MAX_FORM_BYTES);
    } catch (error) {
      if (!(error instanceof PageFormRefused)) throw error;
      return page(
        error.status,
        'This form could not be read',
        markup`<h1>This form could not be read</h1><p>${error.message} Nothing was changed. Open the link from your e-mail again.</p>`,
      );
    }
    const token = fields.get('token') ?? '';
    const password = fields.get('password') ?? '';
    if (!token || token.length > 512) return linkProblem(400, 'invalid');
    if (!password) return form(token, ['Enter a new password.'], 400);
    if (password !== (fields.get('confirm') ?? '')) return form(token, ['The two passwords are not the same.'], 400);
    const outcome = await options.directory.resetPassword(
      token,
      password,
      pageRequestFacts(request, options.trustProxy ?? false),
    );
    switch (outcome.outcome) {
      case 'set':
        logger.info('password reset through the reset page');
        return page(
          200,
          'Your password is changed',
          markup`<h1>Your password is changed</h1>
${notice('You were signed out everywhere. Go back to the application and sign in with your new password.')}`,
        );
      case 'rejected':
        return form(token, outcome.reasons, 422);
      case 'expired':
        return linkProblem(400, 'expired');
      default:
        return linkProblem(400, 'invalid');
    }
  }

  return async function passwordResetPage(request) {
    if (request.url.pathname !== path) return undefined;
    try {
      return await answer(request);
    } catch (error) {
      logger.error('password reset page failed', { error });
      if (isDatabaseUnavailable(error)) {
        return new LightResponse(renderUnavailablePage(assets), {
          status: 503,
          headers: { ...PAGE_HEADERS, 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
        });
      }
      return page(
        500,
        'Something went wrong',
        markup`<h1>Something went wrong</h1><p>Nothing was changed. Try again in a moment.</p>`,
      );
    }
  };
}
