import { LightResponse, type Logger, markup, type SafeHtml, silentLogger } from '@idt/core';
import type { TokenMac } from '@idt/identity';
import type { AccountDirectory, AccountReauthentication } from '../directory.js';
import { methodNotAllowed } from '../page-forms.js';
import type { PageRequest } from '../page-request.js';
import { errorSummary, notice } from '../pages.js';
import { totpEnrolmentView } from '../totp-enrolment-view.js';
import { type AccountPageSession, createAccountPageGuard, doneNotice, redirectDone } from './page-guard.js';

/** The two-step verification page's path, relative to the deployment prefix. */
export const ACCOUNT_TWO_STEP_PATH = '/connect/account/two-step';

/** What the two-step page needs of the account pages. */
export interface AccountTwoStepPageOptions {
  readonly directory: Pick<
    AccountDirectory,
    'findSession' | 'secondFactors' | 'beginTotp' | 'confirmTotp' | 'regenerateRecoveryCodes' | 'removeTotp' | 'reauthenticate'
  >;
  /** The sign-in session cookie. */
  readonly sessionCookieName: string;
  /** HMAC tokens; the forms' CSRF tokens are bound to the session (the account page's purpose). */
  readonly tokens: TokenMac;
  /** The deployment path prefix (`''` or `/idt`). */
  readonly pathPrefix: string;
  /** Whether `x-forwarded-for` names the client, for the audit records (`IDT_TRUST_PROXY`); false by default. */
  readonly trustProxy?: boolean;
  readonly logger?: Logger;
}

/** Room for a long password in the "confirm it's you" field. */
const MAX_FORM_BYTES = 8 * 1024;
const TOTP_CODE = /^\d{6}$/;
const ACTIONS: ReadonlySet<string> = new Set(['begin', 'confirm', 'recovery-codes', 'remove']);

/** What a completed change says on the page it redirects to (Post/Redirect/Get). */
const NOTICES: ReadonlyMap<string, string> = new Map([
  ['enabled', 'Two-step verification is on: signing in asks for a code from your authenticator app.'],
  ['removed', 'The authenticator app was removed. We sent a notice to your e-mail address.'],
]);

type Reauth = 'ok' | 'required' | 'wrong' | 'locked';

/** The sentence of a failed "confirm it's you". */
function reauthError(outcome: Exclude<Reauth, 'ok'>): string {
  switch (outcome) {
    case 'required':
      return "Confirm it's you: enter your password or a code from your authenticator app.";
    case 'locked':
      return 'Too many wrong codes or passwords. Wait 5 minutes, then try again.';
    default:
      return 'That password or code is wrong. Nothing was changed.';
  }
}

/**
 * The two-step verification section of the account pages, at
 * `/connect/account/two-step`: the status of the user's second factors, and
 * forms (each with a CSRF token bound to the session) that set up an
 * authenticator app (`/begin` shows the QR code and the key, `/confirm`
 * takes the first code), make new recovery codes (`/recovery-codes`, shown
 * once) and remove the app (`/remove`). Changes need a recent sign-in
 * (within 5 minutes) or the "confirm it's you" fields (password or code).
 * Without a session it answers 401.
 *
 * @example
 * const twoStepPage = createAccountTwoStepPage({ directory, sessionCookieName, tokens, pathPrefix: '' });
 * if (action === 'two-step' || action.startsWith('two-step/')) return twoStepPage(request, action.slice(9));
 */
export function createAccountTwoStepPage(
  options: AccountTwoStepPageOptions,
): (request: PageRequest, action: string) => Promise<LightResponse> {
  const logger = options.logger ?? silentLogger;
  const { directory } = options;
  const account = `${options.pathPrefix}/connect/account`;
  const path = `${options.pathPrefix}${ACCOUNT_TWO_STEP_PATH}`;
  const guard = createAccountPageGuard(options, {
    maxFormBytes: MAX_FORM_BYTES,
    page: { scripts: ['focus.js'] },
    links: markup`<a href="${path}">Back to two-step verification</a><a href="${account}">Back to your account</a>`,
  });
  const { page, message } = guard;
  const redirect = (done: string) => redirectDone(path, done);
  const csrf = guard.csrfField;

  /** The "confirm it's you" fields of a change, when the session is not recent enough. */
  function reauthFields(form: string, needed: boolean): SafeHtml {
    if (!needed) return markup``;
    return markup`<fieldset class="reauth">
<legend>Confirm it's you</legend>
<p class="hint" id="${form}-reauth-hint">You signed in more than 5 minutes ago. Enter your password, or a code from your authenticator app (or a recovery code).</p>
<label for="${form}-password">Password</label>
<input id="${form}-password" name="password" type="password" autocomplete="current-password" aria-describedby="${form}-reauth-hint">
<label for="${form}-reauth-code">Or a code</label>
<input id="${form}-reauth-code" name="reauthCode" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="64">
</fieldset>`;
  }

  /** The proof a form carries, if any. */
  function proofOf(fields: URLSearchParams): AccountReauthentication | undefined {
    const password = fields.get('password') ?? '';
    const code = (fields.get('reauthCode') ?? '').trim();
    if (password) return { password: password.slice(0, 1024) };
    if (code) return { code: code.slice(0, 64) };
    return undefined;
  }

  async function overview(session: AccountPageSession, view: { status?: number; errors?: string[]; notice?: string } = {}) {
    const [factors, reauth] = await Promise.all([
      directory.secondFactors(session.userId),
      directory.reauthenticate(session.userId, session.sessionId),
    ]);
    const stale = reauth !== 'ok';
    const hasFactor = factors.totp || factors.passkeys > 0;
    const body = markup`<h1>Two-step verification</h1>
${errorSummary(view.errors ?? [])}${notice(view.notice)}
<p>With two-step verification, signing in asks for a code from an app on your phone as well as your password, so a stolen password alone does not open your account.</p>
<dl class="facts">
<dt>Authenticator app</dt><dd>${factors.totp ? 'On' : 'Off'}</dd>
<dt>Recovery codes</dt><dd>${hasFactor ? `${factors.recoveryCodesLeft} unused` : '—'}</dd>
${factors.passkeys > 0 && markup`<dt>Passkeys</dt><dd>${factors.passkeys}</dd>`}
</dl>
<section aria-labelledby="app">
<h2 id="app">Authenticator app</h2>
<form method="post" action="${path}/begin">
${csrf(session)}
<button type="submit"${factors.totp ? markup` class="secondary"` : markup``}>${factors.totp ? 'Replace the authenticator app' : 'Set up an authenticator app'}</button>
</form>
</section>
${
  hasFactor &&
  markup`<section aria-labelledby="codes">
<h2 id="codes">Recovery codes</h2>
<p class="hint">Each recovery code signs you in once when you do not have your phone. Making new ones ends the old ones.</p>
<form method="post" action="${path}/recovery-codes" novalidate>
${csrf(session)}
${reauthFields('codes', stale)}
<button type="submit" class="secondary">Make new recovery codes</button>
</form>
</section>`
}
${
  factors.totp &&
  markup`<section aria-labelledby="remove">
<h2 id="remove">Remove the authenticator app</h2>
<p class="hint">Signing in will no longer ask for its codes${factors.passkeys > 0 ? '' : ', and your recovery codes stop working'}.</p>
<form method="post" action="${path}/remove" novalidate>
${csrf(session)}
${reauthFields('remove', stale)}
<button type="submit" class="secondary">Remove the authenticator app</button>
</form>
</section>`
}
<div class="links"><a href="${account}">Back to your account</a></div>`;
    return page(view.status ?? 200, 'Two-step verification', body);
  }

  /** The set-up: the QR code, the key and the first code's form. */
  async function begin(session: AccountPageSession) {
    const [enrolment, reauth] = await Promise.all([
      directory.beginTotp(session.userId, ''),
      directory.reauthenticate(session.userId, session.sessionId),
    ]);
    const body = markup`<h1>Set up an authenticator app</h1>
${totpEnrolmentView({
  enrolment,
  action: `${path}/confirm`,
  hidden: markup`${csrf(session)}<input type="hidden" name="enrolment" value="${enrolment.enrolmentId}">`,
  extra: reauthFields('confirm', reauth !== 'ok'),
})}
<p class="hint">The set-up works for 15 minutes.</p>
<div class="links"><a href="${path}">Cancel</a></div>`;
    return page(200, 'Set up an authenticator app', body);
  }

  /** The first code's form again (the app already holds the key), with its error. */
  async function retryConfirm(session: AccountPageSession, enrolmentId: string, error: string, status: number) {
    const reauth = await directory.reauthenticate(session.userId, session.sessionId);
    const errors = [error];
    const body = markup`<h1>Set up an authenticator app</h1>
${errorSummary(errors)}
<form method="post" action="${path}/confirm" novalidate>
${csrf(session)}<input type="hidden" name="enrolment" value="${enrolmentId}">
<label for="totp-code">6-digit code from the app</label>
<input id="totp-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="7" required aria-describedby="error-summary">
${reauthFields('confirm', reauth !== 'ok')}
<button type="submit">Turn on two-step verification</button>
</form>
<form method="post" action="${path}/begin">
${csrf(session)}
<button type="submit" class="secondary">Start again with a new QR code</button>
</form>
<div class="links"><a href="${path}">Cancel</a></div>`;
    return page(status, 'Set up an authenticator app', body);
  }

  /** Recovery codes, shown this once. */
  function codesPage(title: string, lead: string, codes: readonly string[]) {
    const body = markup`<h1>${title}</h1>
${notice(lead)}
<p>Save these recovery codes somewhere safe, such as your password manager. Each one signs you in once when you do not have your phone. They are shown only now.</p>
<ul class="codes">${codes.map((code) => markup`<li><code>${code}</code></li>`)}</ul>
<div class="links"><a href="${path}">I saved them: back to two-step verification</a></div>`;
    return page(200, title, body);
  }

  async function change(request: PageRequest, session: AccountPageSession, action: string): Promise<LightResponse> {
    const fields = await guard.readForm(request, session);
    if (fields instanceof LightResponse) return fields;
    if (action === 'begin') return begin(session);

    if (action === 'confirm') {
      const enrolmentId = (fields.get('enrolment') ?? '').slice(0, 64);
      const code = (fields.get('code') ?? '').replace(/\s+/g, '');
      if (!enrolmentId) return retryConfirm(session, '', 'This set-up has expired. Start again with a new QR code.', 400);
      if (!TOTP_CODE.test(code))
        return retryConfirm(session, enrolmentId, 'Enter the 6 digits your authenticator app shows.', 400);
      const reauth = await directory.reauthenticate(session.userId, session.sessionId, proofOf(fields));
      if (reauth !== 'ok') return retryConfirm(session, enrolmentId, reauthError(reauth), reauth === 'locked' ? 429 : 403);
      const confirmed = await directory.confirmTotp(session.userId, enrolmentId, code, guard.requestFacts(request));
      if (confirmed === 'wrong') {
        return retryConfirm(session, enrolmentId, 'That code did not match. Enter the code the app shows now.', 400);
      }
      if (confirmed === 'locked') {
        return retryConfirm(session, enrolmentId, 'Too many wrong codes. Wait 5 minutes, then try again.', 429);
      }
      if (confirmed === 'expired') {
        return retryConfirm(session, enrolmentId, 'This set-up has expired. Start again with a new QR code.', 400);
      }
      logger.info('account: authenticator app set up by its user', { userId: session.userId });
      if (!confirmed.recoveryCodes?.length) return redirect('enabled');
      return codesPage(
        'Two-step verification is on',
        'Signing in now asks for a code from your authenticator app.',
        confirmed.recoveryCodes,
      );
    }

    const reauth = await directory.reauthenticate(session.userId, session.sessionId, proofOf(fields));
    if (reauth !== 'ok') return overview(session, { status: reauth === 'locked' ? 429 : 403, errors: [reauthError(reauth)] });

    if (action === 'recovery-codes') {
      const codes = await directory.regenerateRecoveryCodes(session.userId, guard.requestFacts(request));
      if (!codes) {
        return overview(session, {
          status: 404,
          errors: ['Set up an authenticator app or a passkey before making recovery codes.'],
        });
      }
      logger.info('account: recovery codes made by their user', { userId: session.userId });
      return codesPage('Your new recovery codes', 'Your old recovery codes no longer work.', codes);
    }

    const removed = await directory.removeTotp(session.userId, guard.requestFacts(request));
    if (removed === 'required') {
      return overview(session, {
        status: 422,
        errors: [
          'An organization you belong to requires two-step verification. Add a passkey before removing your authenticator app, or replace the app instead.',
        ],
      });
    }
    if (removed === 'not-enrolled')
      return overview(session, { status: 404, errors: ['There is no authenticator app to remove.'] });
    logger.info('account: authenticator app removed by its user', { userId: session.userId });
    return redirect('removed');
  }

  return async function twoStepPage(request, action) {
    const session = await guard.session(request);
    if (!session) return guard.signedOut('Sign in to manage two-step verification');
    if (action === '') {
      if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed('GET, HEAD');
      return overview(session, doneNotice(request, NOTICES));
    }
    if (!ACTIONS.has(action)) return message(404, 'Page not found', 'There is no such page on your account.');
    if (request.method !== 'POST') return methodNotAllowed('POST');
    return change(request, session, action);
  };
}
