import { type AuditRequestFacts, LightResponse, markup, readCookie, type SafeHtml } from '@idt/core';
import type { TokenMac } from '@idt/identity';
import { pageSecurityHeaders } from '../../policy/security-headers.js';
import type { AccountDirectory } from '../directory.js';
import { PageFormRefused, postedFromThisSite, readPageForm } from '../page-forms.js';
import type { PageRequest } from '../page-request.js';
import { pageRequestFacts } from '../page-request-facts.js';
import { type PageOptions, renderPage } from '../pages.js';

/** The purpose of the account pages' CSRF tokens: one for every account page, each token bound to the session. */
export const ACCOUNT_CSRF_PURPOSE = 'account-csrf';

/** Every account page's headers. */
export const ACCOUNT_PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  ...pageSecurityHeaders(),
};

/** The signed-in session an account page works for. */
export interface AccountPageSession {
  readonly sessionId: string;
  readonly userId: string;
}

/** What {@link createAccountPageGuard} needs of the account pages' options. */
export interface AccountPageGuardOptions {
  readonly directory: Pick<AccountDirectory, 'findSession'>;
  /** The sign-in session cookie. */
  readonly sessionCookieName: string;
  /** HMAC tokens; the forms' CSRF tokens are bound to the session. */
  readonly tokens: TokenMac;
  /** The deployment path prefix (`''` or `/idt`). */
  readonly pathPrefix: string;
  /** Whether `x-forwarded-for` names the client (behind a trusted proxy, `IDT_TRUST_PROXY`); false by default. */
  readonly trustProxy?: boolean;
}

/** How one account page looks and what its forms may hold. */
export interface AccountPageLayout {
  /** The most bytes a form of the page may hold. */
  readonly maxFormBytes: number;
  /** The page's scripts and width. */
  readonly page?: Pick<PageOptions, 'scripts' | 'wide'>;
  /** The links under a message; by default back to the account page. */
  readonly links?: SafeHtml;
}

/** What every account page does before its own work, bound to one page's look. */
export interface AccountPageGuard {
  /** The active session the request's sign-in cookie names, if any. */
  session(request: PageRequest): Promise<AccountPageSession | undefined>;
  /** The page around `body`, with the account pages' headers. */
  page(status: number, title: string, body: SafeHtml): LightResponse;
  /** A page that says one thing (a refusal or a failure), with the page's links under it. */
  message(status: number, title: string, text: string): LightResponse;
  /** The 401 page for a visitor without a session. */
  signedOut(title: string): LightResponse;
  /** The hidden CSRF field of a form, bound to the session. */
  csrfField(session: AccountPageSession): SafeHtml;
  /** Whether a form carries the session's CSRF token. */
  csrfValid(form: URLSearchParams, session: AccountPageSession): boolean;
  /**
   * A posted form of the page: from this site, readable, and carrying the
   * session's CSRF token; otherwise the refusal page (403, 413, 415, 400),
   * which changes nothing.
   */
  readForm(request: PageRequest, session: AccountPageSession): Promise<URLSearchParams | LightResponse>;
  /** The request's client address, user agent and trace id, for the audit record of the change it makes. */
  requestFacts(request: PageRequest): AuditRequestFacts;
}

/**
 * The checks and pages the account pages share: the session from the
 * sign-in cookie, the message and signed-out pages, and the form read with
 * its origin and CSRF checks.
 *
 * @example
 * const guard = createAccountPageGuard(options, { maxFormBytes: 8 * 1024, page: { scripts: ['focus.js'] } });
 * const session = await guard.session(request);
 * if (!session) return guard.signedOut('Sign in to change your password');
 * const form = await guard.readForm(request, session);
 * if (form instanceof LightResponse) return form;
 */
export function createAccountPageGuard(options: AccountPageGuardOptions, layout: AccountPageLayout): AccountPageGuard {
  const assets = `${options.pathPrefix}/connect/assets`;
  const links = layout.links ?? markup`<a href="${options.pathPrefix}/connect/account">Back to your account</a>`;

  const page = (status: number, title: string, body: SafeHtml) =>
    new LightResponse(renderPage({ title, assets, ...layout.page }, body), { status, headers: ACCOUNT_PAGE_HEADERS });

  const message = (status: number, title: string, text: string) =>
    page(
      status,
      title,
      markup`<h1>${title}</h1>
<p>${text}</p>
<div class="links">${links}</div>`,
    );

  const csrfValid = (form: URLSearchParams, session: AccountPageSession) =>
    options.tokens.verify(ACCOUNT_CSRF_PURPOSE, form.get('csrf') ?? '') === session.sessionId;

  return {
    page,
    message,
    csrfValid,
    async session(request) {
      const cookie = readCookie(request.headers.get('cookie'), options.sessionCookieName);
      return cookie ? options.directory.findSession(cookie) : undefined;
    },
    signedOut: (title) => message(401, title, 'This page needs you to be signed in on this service, in this browser.'),
    csrfField: (session) =>
      markup`<input type="hidden" name="csrf" value="${options.tokens.issue(ACCOUNT_CSRF_PURPOSE, session.sessionId)}">`,
    async readForm(request, session) {
      let form: URLSearchParams;
      try {
        if (!postedFromThisSite(request)) throw new PageFormRefused(403, 'The form was sent from another site.');
        form = await readPageForm(request, layout.maxFormBytes);
      } catch (error) {
        if (!(error instanceof PageFormRefused)) throw error;
        return message(error.status, 'This form could not be read', `${error.message} Nothing was changed.`);
      }
      if (!csrfValid(form, session)) {
        return message(403, 'This form has expired', 'Nothing was changed. Reload the page and try again.');
      }
      return form;
    },
    requestFacts: (request) => pageRequestFacts(request, options.trustProxy ?? false),
  };
}

/** The Post/Redirect/Get answer of a completed change: 303 to `path?done=key`, where the page says what was done. */
export function redirectDone(path: string, key: string): LightResponse {
  return new LightResponse(null, { status: 303, headers: { location: `${path}?done=${key}`, 'cache-control': 'no-store' } });
}

/** The sentence a page shows for the `done` its redirect named, if it is one of `notices`. */
export function doneNotice(request: PageRequest, notices: ReadonlyMap<string, string>): { notice?: string } {
  const key = request.url.searchParams.get('done');
  const text = key === null ? undefined : notices.get(key);
  return text ? { notice: text } : {};
}
