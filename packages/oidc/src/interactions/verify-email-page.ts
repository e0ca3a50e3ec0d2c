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
import { methodNotAllowed, PageFormRefused, readPageForm, safeParams } from './page-forms.js';
import type { PageHandler, PageRequest } from './page-request.js';
import { errorSummary, notice, renderPage, renderUnavailablePage } from './pages.js';

/** The confirm page's path, relative to the deployment prefix (the mailed link: `?token=`). */
export const VERIFY_EMAIL_PAGE = '/connect/verify-email';

/** Options of {@link createVerifyEmailPage}. */
export interface VerifyEmailPageOptions {
  readonly directory: Pick<AccountDirectory, 'emailVerificationState' | 'verifyEmail'>;
  /** The deployment path prefix (`''` or `/idt`). */
  readonly pathPrefix: string;
  readonly logger?: Logger;
}

const MAX_FORM_BYTES = 4 * 1024;
/** A token as the mailed link carries it (`<id>.<mac>`); anything else is not worth a database read. */
const TOKEN = /^[A-Za-z0-9._-]{1,512}$/;
const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  ...pageSecurityHeaders(),
  'cache-control': 'no-store',
};

/**
 * The page a mailed verification link opens, `{prefix}/connect/verify-email?token=`.
 * Opening it (`GET`) uses nothing: mail scanners and link previews fetch
 * links, so the page shows one button that posts the token back (`POST`),
 * and that uses the link (once) and marks the address verified. An expired,
 * used or replaced link gets a page that says so and how to get a new one.
 * Returns a page handler (see `pageSurface`) that declines every other path.
 *
 * @example
 * const verifyEmail = createVerifyEmailPage({ directory, pathPrefix: '' });
 */
export function createVerifyEmailPage(options: VerifyEmailPageOptions): PageHandler {
  const logger = options.logger ?? silentLogger;
  const path = `${options.pathPrefix}${VERIFY_EMAIL_PAGE}`;
  const assets = `${options.pathPrefix}/connect/assets`;

  const page = (status: number, title: string, body: SafeHtml, extra: Record<string, string> = {}) =>
    new LightResponse(renderPage({ title, assets, scripts: ['focus.js'] }, body), {
      status,
      headers: { ...PAGE_HEADERS, ...extra },
    });

  const unusable = (state: 'expired' | 'invalid') =>
    state === 'expired'
      ? page(
          400,
          'This link has expired',
          markup`<h1>This link has expired</h1>
${errorSummary(['Verification links work for 24 hours.'])}
<p>Sign in to the application again: the sign-in asks you to verify your address and offers a new link.</p>`,
        )
      : page(
          400,
          'This link does not work',
          markup`<h1>This link does not work</h1>
${errorSummary(['The link is incomplete, was already used, or a newer link replaced it.'])}
<p>If your address is not verified yet, sign in to the application again: the sign-in offers a new link. Only the newest link works.</p>`,
        );

  async function show(token: string | null): Promise<LightResponse> {
    if (token === null || !TOKEN.test(token)) return unusable('invalid');
    const state = await options.directory.emailVerificationState(token);
    if (state !== 'valid') return unusable(state);
    return page(
      200,
      'Verify your e-mail address',
      markup`<h1>Verify your e-mail address</h1>
<p>Press the button to confirm that this e-mail address is yours.</p>
<form method="post" action="${path}">
<input type="hidden" name="token" value="${token}">
<button type="submit">Verify my e-mail address</button>
</form>`,
    );
  }

  async function confirm(request: PageRequest): Promise<LightResponse> {
    let fields: URLSearchParams;
    try {
      fields = await readPageForm(request, MAX_FORM_BYTES);
    } catch (error) {
      if (!(error instanceof PageFormRefused)) throw error;
      // Past the media type, a form this page did not make (too large, not UTF-8) reads as a broken link.
      if (error.status !== 415) return unusable('invalid');
      return page(
        415,
        'This link does not work',
        markup`<h1>This link does not work</h1>${errorSummary(['Send the form as the page does.'])}`,
      );
    }
    const token = fields.get('token');
    if (token === null || !TOKEN.test(token)) return unusable('invalid');
    const outcome = await options.directory.verifyEmail(token);
    if (outcome !== 'verified') return unusable(outcome);
    return page(
      200,
      'Your e-mail address is verified',
      markup`<h1>Your e-mail address is verified</h1>
${notice('Thank you: your e-mail address is confirmed.')}
<p>You can close this page and sign in to the application.</p>`,
    );
  }

  async function answer(request: PageRequest): Promise<LightResponse> {
    if (request.method === 'GET' || request.method === 'HEAD') {
      if (!safeParams(request.url.search)) return unusable('invalid');
      return show(request.url.searchParams.get('token'));
    }
    if (request.method === 'POST') return confirm(request);
    return methodNotAllowed('GET, HEAD, POST');
  }

  return async function verifyEmailPage(request) {
    if (request.url.pathname !== path) return undefined;
    try {
      return await answer(request);
    } catch (error) {
      logger.error('e-mail verification page failed', { error });
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
