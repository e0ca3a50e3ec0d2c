import {
  type AuditRequestFacts,
  DATABASE_RETRY_AFTER_SECONDS,
  isDatabaseUnavailable,
  joinMarkup,
  LightResponse,
  type Logger,
  markup,
  silentLogger,
} from '@idt/core';
import type { TokenMac } from '@idt/identity';
import { ProblemError } from '@idt/problem';
import type { StoredClient } from '../clients/store.js';
import {
  ACCOUNT_PAGE_HEADERS,
  type AccountPageSession,
  createAccountPageGuard,
  doneNotice,
  redirectDone,
} from './account-security/page-guard.js';
import { createAccountPasskeysPage } from './account-security/passkeys.js'; // D: passkeys
import { createAccountPasswordPage } from './account-security/password.js';
import { createAccountTwoStepPage } from './account-security/two-step.js';
import type { AccountDirectory } from './directory.js';
import { methodNotAllowed, PageFormRefused, readPageForm } from './page-forms.js';
import type { PageHandler, PageRequest } from './page-request.js';
import { errorSummary, notice, renderPage, renderUnavailablePage } from './pages.js';
import type { ConsentStore } from './stores.js';

/** The account page's path, relative to the deployment prefix. */
export const ACCOUNT_BASE = '/connect/account';

/** A sign-in session as the account page lists it. */
export interface AccountSession {
  readonly id: string;
  readonly createdAt: string;
  readonly lastActivityAt: string;
  readonly expiresAt: string;
}

/**
 * The identity module's services the account page calls. The changes take
 * the page request's facts (`request`) for their audit records; the actor is the user.
 */
export interface AccountServices {
  /** The user's active sign-in sessions. */
  listSessions(userId: string): Promise<readonly AccountSession[]>;
  /** Ends one of the user's sessions (its tokens and single sign-on end too); `false` when it is not the user's or already ended. */
  revokeSession(userId: string, sessionId: string, request: AuditRequestFacts): Promise<boolean>;
  /**
   * Asks to move the user to a new address (a confirmation link goes there).
   *
   * @throws ProblemError `Validation.Failed`, `EmailChange.SameEmail`, `EmailChange.Unavailable`, `RateLimit.Exceeded`.
   */
  requestEmailChange(userId: string, newEmail: string, request: AuditRequestFacts): Promise<void>;
}

/** Options of {@link createAccountPages}. */
export interface AccountPagesOptions {
  readonly directory: AccountDirectory;
  readonly consents: ConsentStore;
  readonly account: AccountServices;
  /** Ends the client's token families for the user (consent withdrawn). */
  readonly revokeClientGrants: (userId: string, clientId: string) => Promise<void>;
  readonly findClient: (clientId: string) => Promise<StoredClient | undefined>;
  /** The sign-in session cookie. */
  readonly sessionCookieName: string;
  /** HMAC tokens; the forms' CSRF tokens are bound to the session. */
  readonly tokens: TokenMac;
  /** The deployment path prefix (`''` or `/idt`). */
  readonly pathPrefix: string;
  /** Whether `x-forwarded-for` names the client, for the audit records (`IDT_TRUST_PROXY`); false by default. */
  readonly trustProxy?: boolean;
  /** Where a signed-out visitor can sign in (e.g. the demo application's authorization URL); none in production. */
  readonly signInUrl?: () => Promise<string | undefined>;
  readonly logger?: Logger;
}

const MAX_FORM_BYTES = 8 * 1024;
const ACTIONS: ReadonlySet<string> = new Set(['sessions/revoke', 'consents/withdraw', 'email']);

/** What a completed action says on the page it redirects to (Post/Redirect/Get). */
const NOTICES: ReadonlyMap<string, string> = new Map([
  ['session-revoked', 'The session was signed out. Applications it signed in to lose their tokens.'],
  ['consent-withdrawn', 'Access withdrawn. The application has to ask again next time, and its refresh tokens stopped working.'],
  [
    'email-requested',
    'If the address is free, a confirmation link is on its way to it. Your address changes when you open the link.',
  ],
]);

function formatTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * The account page of the signed-in user on the sign-in host,
 * `GET /connect/account`: profile, active sessions (each with a sign-out
 * button), the applications the user allowed (each with a withdraw button)
 * and a change-e-mail form. It reads the sign-in session cookie; without
 * one it answers 401 with a way to sign in. Its forms post to
 * `/connect/account/sessions/revoke`, `/connect/account/consents/withdraw`
 * and `/connect/account/email` with a CSRF token bound to the session, then
 * redirect back (303). Refusals are pages that change nothing. Returns a
 * page handler (see `pageSurface`) that declines every other path.
 *
 * @example
 * const account = createAccountPages({ directory, consents, account: services, revokeClientGrants, findClient, sessionCookieName, tokens, pathPrefix: '' });
 */
export function createAccountPages(options: AccountPagesOptions): PageHandler {
  const logger = options.logger ?? silentLogger;
  const base = `${options.pathPrefix}${ACCOUNT_BASE}`;
  const assets = `${options.pathPrefix}/connect/assets`;
  const passwordPage = createAccountPasswordPage(options); // A: passwords
  const twoStepPage = createAccountTwoStepPage(options); // C1: two-step verification
  const passkeysPage = createAccountPasskeysPage(options); // D: passkeys
  const guard = createAccountPageGuard(options, { maxFormBytes: MAX_FORM_BYTES });

  const send = (status: number, html: string, extra: Record<string, string> = {}) =>
    new LightResponse(html, { status, headers: { ...ACCOUNT_PAGE_HEADERS, ...extra } });

  async function signedOut(): Promise<LightResponse> {
    const signIn = options.signInUrl ? await options.signInUrl() : undefined;
    return guard.page(
      401,
      'Sign in to see your account',
      markup`<h1>Sign in to see your account</h1>
<p>This page shows your profile, where you are signed in and the applications you allowed. It needs you to be signed in on this service, in this browser.</p>
<p class="hint">Sign in through one of the applications that use this service, then come back to this address.</p>
${signIn && markup`<div class="links"><a href="${signIn}">Sign in with the demo application</a></div>`}`,
    );
  }

  async function accountPage(
    session: AccountPageSession,
    view: { status?: number; errors?: string[]; notice?: string; email?: string } = {},
  ): Promise<LightResponse> {
    const { userId, sessionId } = session;
    const [claims, sessions, consents] = await Promise.all([
      options.directory.accountClaims(userId, null),
      options.account.listSessions(userId),
      options.consents.list(userId),
    ]);
    const clients = await Promise.all(consents.map((consent) => options.findClient(consent.clientId)));
    const csrf = guard.csrfField(session);
    const sessionItems = sessions.map(
      (
        entry,
      ) => markup`<li><span>${entry.id === sessionId ? markup`<strong>This browser</strong>` : 'Another browser or device'}<br>
<span class="hint">Signed in ${formatTime(entry.createdAt)} · last active ${formatTime(entry.lastActivityAt)}</span></span>
<form method="post" action="${base}/sessions/revoke">${csrf}<input type="hidden" name="session" value="${entry.id}">
<button type="submit" class="secondary" aria-label="Sign out the session started ${formatTime(entry.createdAt)}">Sign out</button></form></li>`,
    );
    const consentItems = consents.map((consent, index) => {
      const client = clients[index];
      const name = client?.branding?.displayName ?? client?.name ?? consent.clientId;
      return markup`<li><span>${name}<br>
<span class="hint">${consent.scopes.join(', ')} · allowed ${formatTime(consent.updatedAt)}</span></span>
<form method="post" action="${base}/consents/withdraw">${csrf}<input type="hidden" name="client" value="${consent.clientId}">
<button type="submit" class="secondary" aria-label="Withdraw access of ${name}">Withdraw</button></form></li>`;
    });
    const body = markup`<h1>Your account</h1>
${errorSummary(view.errors ?? [])}${notice(view.notice)}
<section aria-labelledby="profile">
<h2 id="profile">Profile</h2>
<dl class="facts">
<dt>Name</dt><dd>${claims?.name || '—'}</dd>
<dt>E-mail</dt><dd>${claims?.email ?? '—'}</dd>
</dl>
<form method="post" action="${base}/email" novalidate>
${csrf}
<label for="email">New e-mail address</label>
<input id="email" name="email" type="email" autocomplete="email" required value="${view.email ?? ''}">
<p class="hint">We send a confirmation link to the new address; your address changes when you open it.</p>
<button type="submit" class="secondary">Change e-mail address</button>
</form>
</section>
<section aria-labelledby="password">
<h2 id="password">Password</h2>
<div class="links"><a href="${base}/password">Change your password</a></div>
</section>
<section aria-labelledby="two-step">
<h2 id="two-step">Two-step verification</h2>
<div class="links"><a href="${base}/two-step">Authenticator app and recovery codes</a></div>
<div class="links"><a href="${base}/passkeys">Passkeys</a></div>
</section>
<section aria-labelledby="sessions">
<h2 id="sessions">Where you are signed in</h2>
${sessions.length ? markup`<ul class="account-list">${joinMarkup(sessionItems, '\n')}</ul>` : markup`<p class="hint">No active sessions.</p>`}
</section>
<section aria-labelledby="consents">
<h2 id="consents">Applications you allowed</h2>
${consents.length ? markup`<ul class="account-list">${joinMarkup(consentItems, '\n')}</ul>` : markup`<p class="hint">You have not allowed any application yet.</p>`}
</section>`;
    return send(view.status ?? 200, renderPage({ title: 'Your account', assets, scripts: ['focus.js'], wide: true }, body));
  }

  async function handlePost(request: PageRequest, action: string): Promise<LightResponse> {
    const session = await guard.session(request);
    if (!session) return signedOut();
    // Unlike the account-security pages' forms, these check no origin: the CSRF token is their guard.
    let form: URLSearchParams;
    try {
      form = await readPageForm(request, MAX_FORM_BYTES);
    } catch (error) {
      if (error instanceof PageFormRefused) return guard.message(error.status, 'This form could not be read', error.message);
      throw error;
    }
    if (!guard.csrfValid(form, session)) {
      return guard.message(403, 'This form has expired', 'Nothing was changed. Reload your account page and try again.');
    }
    const done = (key: string) => redirectDone(base, key);
    if (action === 'sessions/revoke') {
      const id = form.get('session') ?? '';
      if (!id || !(await options.account.revokeSession(session.userId, id, guard.requestFacts(request)))) {
        return accountPage(session, { status: 404, errors: ['That session is not one of yours or has already ended.'] });
      }
      logger.info('account: session revoked by its user', { userId: session.userId, sessionId: id });
      return done('session-revoked');
    }
    if (action === 'consents/withdraw') {
      const clientId = form.get('client') ?? '';
      if (!clientId || clientId.length > 200 || !(await options.consents.forget(session.userId, clientId))) {
        return accountPage(session, { status: 404, errors: ['You have not allowed that application.'] });
      }
      await options.revokeClientGrants(session.userId, clientId);
      logger.info('account: consent withdrawn', { userId: session.userId, clientId });
      return done('consent-withdrawn');
    }
    const email = (form.get('email') ?? '').trim();
    try {
      await options.account.requestEmailChange(session.userId, email, guard.requestFacts(request));
    } catch (error) {
      const message = emailChangeRefusal(error);
      if (!message) throw error;
      return accountPage(session, { status: message.status, errors: [message.text], email });
    }
    return done('email-requested');
  }

  async function answer(request: PageRequest, action: string): Promise<LightResponse> {
    if (action === '') {
      if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed('GET, HEAD');
      const session = await guard.session(request);
      if (!session) return signedOut();
      return accountPage(session, doneNotice(request, NOTICES));
    }
    if (action === 'password') return passwordPage(request); // A: passwords
    // C1: two-step verification
    if (action === 'two-step' || action.startsWith('two-step/')) return twoStepPage(request, action.slice('two-step/'.length));
    // D: passkeys
    if (action === 'passkeys' || action.startsWith('passkeys/')) return passkeysPage(request, action.slice('passkeys/'.length));
    if (!ACTIONS.has(action)) return guard.message(404, 'Page not found', 'There is no such page on your account.');
    if (request.method !== 'POST') return methodNotAllowed('POST');
    return handlePost(request, action);
  }

  return async function accountPages(request) {
    const path = request.url.pathname;
    if (path !== base && !path.startsWith(`${base}/`)) return undefined;
    try {
      return await answer(request, path.slice(base.length + 1));
    } catch (error) {
      logger.error('account page failed', { error });
      if (isDatabaseUnavailable(error)) {
        return send(503, renderUnavailablePage(assets), { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) });
      }
      return guard.message(500, 'Something went wrong', 'Nothing was changed. Try again in a moment.');
    }
  };
}

/** The page's sentence for an expected refusal of an e-mail change, or `undefined` for a failure. */
function emailChangeRefusal(error: unknown): { status: number; text: string } | undefined {
  if (error instanceof ProblemError) {
    switch (error.code) {
      case 'Validation.Failed':
        return { status: 400, text: 'Enter a valid e-mail address.' };
      case 'EmailChange.SameEmail':
        return { status: 400, text: 'That is already your e-mail address.' };
      case 'EmailChange.Unavailable':
        return { status: 503, text: 'This service sends no e-mail, so the address cannot be changed here.' };
      case 'RateLimit.Exceeded':
        return { status: 429, text: 'Too many e-mail change requests. Wait an hour and try again.' };
      default:
        return error.status < 500 ? { status: error.status, text: error.detail } : undefined;
    }
  }
  if (error && typeof error === 'object' && 'issues' in error) return { status: 400, text: 'Enter a valid e-mail address.' };
  return undefined;
}
