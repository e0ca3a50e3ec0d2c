import { isUuid, joinMarkup, json, LightResponse, type Logger, markup, type SafeHtml, silentLogger } from '@idt/core';
import type { TokenMac } from '@idt/identity';
import type { AccountDirectory, AccountPasskey, PasskeyRefusal } from '../directory.js';
import { methodNotAllowed } from '../page-forms.js';
import type { PageRequest } from '../page-request.js';
import { errorSummary, notice } from '../pages.js';
import { credentialOf } from '../steps/passkey.js';
import { type AccountPageSession, createAccountPageGuard, doneNotice, redirectDone } from './page-guard.js';

/** The passkeys page's path, relative to the deployment prefix. */
export const ACCOUNT_PASSKEYS_PATH = '/connect/account/passkeys';

/** What the passkeys page needs of the account pages. */
export interface AccountPasskeysPageOptions {
  readonly directory: Pick<
    AccountDirectory,
    | 'findSession'
    | 'listPasskeys'
    | 'passkeyAccess'
    | 'passkeyCreationOptions'
    | 'registerPasskey'
    | 'renamePasskey'
    | 'removePasskey'
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

/** Room for a browser's registration response (about 1-2 KiB) and the name. */
const MAX_FORM_BYTES = 16 * 1024;
const NAME_MAX = 64;

/** What a completed change says on the page it redirects to (Post/Redirect/Get). */
const NOTICES: ReadonlyMap<string, string> = new Map([
  ['added', 'Passkey added. You can sign in with it, and it serves as your second step.'],
  ['renamed', 'Passkey renamed.'],
  ['removed', 'Passkey removed. It no longer signs you in.'],
  ['confirmed', 'Thank you. You can change your passkeys for the next 5 minutes.'],
]);

/** The page's sentence and status for each refusal. */
const REFUSALS: Readonly<Record<PasskeyRefusal, { status: number; text: string }>> = {
  expired: { status: 400, text: 'The passkey request expired or was already used. Try again.' },
  rejected: { status: 400, text: 'The passkey could not be verified. Try again in this browser.' },
  invalid: { status: 400, text: 'That was not a passkey your browser made, or the name is not valid.' },
  duplicate: { status: 409, text: 'That passkey is registered already.' },
  limit: { status: 422, text: 'You have 20 passkeys, the most an account can hold. Remove one first.' },
  'not-found': { status: 404, text: 'That passkey is not one of yours, or it was removed already.' },
  'second-factor-required': {
    status: 422,
    text: 'An organization you belong to requires two-step verification and this is your last second factor. Add another passkey or an authenticator app first.',
  },
  reauthenticate: { status: 403, text: 'For your security, confirm your password first.' },
  locked: { status: 429, text: 'Too many wrong attempts. Wait 5 minutes, then try again.' },
  unavailable: { status: 503, text: 'Passkeys are not available on this service.' },
};

function formatTime(iso: string | null): string {
  if (!iso) return 'never';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A name typed in a form: trimmed, 1 to 64 characters without control characters; `undefined` otherwise. */
function nameOf(value: string | null): string | undefined {
  const name = (value ?? '').trim();
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
  return name.length >= 1 && name.length <= NAME_MAX && !/[\u0000-\u001f\u007f]/.test(name) ? name : undefined;
}

/**
 * The passkeys page of the account pages, `/connect/account/passkeys`: the
 * user's passkeys (name, when added and last used, synced or device-bound)
 * with rename and remove forms, and "Add a passkey" (`passkey.js` asks the
 * browser; hidden where WebAuthn is missing). Changes need a recent
 * authentication: a session older than 5 minutes gets a password form first
 * (`…/confirm`). Forms carry a CSRF token bound to the session and redirect
 * (303) with a notice; refusals show the page again with the reason,
 * changing nothing. `POST …/options` answers the creation options as JSON
 * for the script. Without a session it answers 401.
 *
 * @example
 * const passkeysPage = createAccountPasskeysPage({ directory, sessionCookieName, tokens, pathPrefix: '' });
 * if (action === 'passkeys' || action.startsWith('passkeys/')) return passkeysPage(request, action.slice(9));
 */
export function createAccountPasskeysPage(
  options: AccountPasskeysPageOptions,
): (request: PageRequest, action: string) => Promise<LightResponse> {
  const logger = options.logger ?? silentLogger;
  const { directory } = options;
  const account = `${options.pathPrefix}/connect/account`;
  const path = `${options.pathPrefix}${ACCOUNT_PASSKEYS_PATH}`;
  const guard = createAccountPageGuard(options, {
    maxFormBytes: MAX_FORM_BYTES,
    page: { scripts: ['focus.js', 'passkey.js'], wide: true },
  });
  const done = (key: string) => redirectDone(path, key);

  function item(passkey: AccountPasskey, csrf: SafeHtml, canChange: boolean): SafeHtml {
    const kind = passkey.deviceType === 'multiDevice' || passkey.backedUp ? 'Synced passkey' : 'On one device only';
    const id = passkey.id;
    return markup`<li class="passkey-item"><span><strong>${passkey.name}</strong><br>
<span class="hint">${kind} · added ${formatTime(passkey.createdAt)} · last used ${formatTime(passkey.lastUsedAt)}</span></span>
${
  canChange &&
  markup`<div class="actions">
<form method="post" action="${path}/rename" class="rename">${csrf}<input type="hidden" name="passkey" value="${id}">
<label for="name-${id}">New name for ${passkey.name}</label>
<input id="name-${id}" name="name" type="text" maxlength="${NAME_MAX}" required value="${passkey.name}">
<button type="submit" class="secondary">Rename</button></form>
<form method="post" action="${path}/remove">${csrf}<input type="hidden" name="passkey" value="${id}">
<button type="submit" class="secondary" aria-label="Remove the passkey ${passkey.name}">Remove</button></form>
</div>`
}</li>`;
  }

  async function view(
    session: AccountPageSession,
    state: { status?: number; errors?: readonly string[]; notice?: string } = {},
  ): Promise<LightResponse> {
    const [passkeys, access] = await Promise.all([
      directory.listPasskeys(session.userId),
      directory.passkeyAccess(session.userId, session.sessionId),
    ]);
    const canChange = access === 'done';
    const csrf = guard.csrfField(session);
    const list = passkeys.length
      ? markup`<ul class="account-list">${joinMarkup(
          passkeys.map((passkey) => item(passkey, csrf, canChange)),
          '\n',
        )}</ul>`
      : markup`<p class="hint">You have no passkeys yet.</p>`;
    const change = canChange
      ? markup`<section aria-labelledby="add-passkey">
<h2 id="add-passkey">Add a passkey</h2>
<form method="post" action="${path}/register" class="passkey" data-passkey="register" data-options="${path}/options" data-options-method="POST" hidden>
${csrf}
<input type="hidden" name="credential" value="">
<label for="passkey-name">Name</label>
<p class="hint" id="passkey-name-hint">Something to recognise it by later, such as “Work laptop”.</p>
<input id="passkey-name" name="name" type="text" maxlength="${NAME_MAX}" autocomplete="off" aria-describedby="passkey-name-hint">
<button type="submit">Add a passkey</button>
<p class="hint" data-passkey-status role="status" aria-live="polite"></p>
</form>
<p class="hint" data-passkey-unsupported>This browser cannot create passkeys here (or JavaScript is off). Open this page in a browser that supports passkeys to add one.</p>
</section>`
      : markup`<section aria-labelledby="confirm">
<h2 id="confirm">Confirm it is you</h2>
<p>You signed in more than 5 minutes ago. To add, rename or remove passkeys, enter your password.</p>
<form method="post" action="${path}/confirm" novalidate>
${csrf}
<label for="confirm-password">Password</label>
<input id="confirm-password" name="password" type="password" autocomplete="current-password" required${
          (state.errors?.length ?? 0) > 0 && markup` aria-describedby="error-summary"`
        }>
<button type="submit">Confirm</button>
</form>
<p class="hint">No password on this account? Sign out and sign in again, then come back within 5 minutes.</p>
</section>`;
    return guard.page(
      state.status ?? 200,
      'Passkeys',
      markup`<h1>Passkeys</h1>
${errorSummary(state.errors ?? [])}${notice(state.notice)}
<p>A passkey signs you in with your device’s screen lock (fingerprint, face or PIN) instead of a password, and serves as your second step after a password. It works only on this service’s address, so it cannot be phished.</p>
<section aria-labelledby="your-passkeys">
<h2 id="your-passkeys">Your passkeys</h2>
${list}
</section>
${change}
<div class="links"><a href="${account}">Back to your account</a></div>`,
    );
  }

  async function change(request: PageRequest, session: AccountPageSession, action: string, fields: URLSearchParams) {
    const { userId, sessionId } = session;
    const refused = (refusal: PasskeyRefusal) =>
      view(session, { status: REFUSALS[refusal].status, errors: [REFUSALS[refusal].text] });
    if (action === 'options') {
      const created = await directory.passkeyCreationOptions(userId, sessionId);
      if (typeof created === 'string') {
        return json(
          { error: created, message: REFUSALS[created].text },
          { status: REFUSALS[created].status, headers: { 'cache-control': 'no-store' } },
        );
      }
      return json(created, { headers: { 'cache-control': 'no-store' } });
    }
    if (action === 'confirm') {
      const password = fields.get('password') ?? '';
      if (password === '' || password.length > 1024) return view(session, { status: 400, errors: ['Enter your password.'] });
      const outcome = await directory.passkeyAccess(userId, sessionId, { password });
      if (outcome === 'done') return done('confirmed');
      if (outcome === 'reauthenticate') return view(session, { status: 400, errors: ['The password is wrong.'] });
      return refused(outcome);
    }
    if (action === 'register') {
      const credential = credentialOf(fields);
      if (credential === undefined) return refused('invalid');
      const typed = (fields.get('name') ?? '').trim();
      const name = typed === '' ? undefined : nameOf(typed);
      if (typed !== '' && name === undefined) {
        return view(session, { status: 400, errors: [`Give the passkey a name of at most ${NAME_MAX} characters.`] });
      }
      const outcome = await directory.registerPasskey(userId, sessionId, credential, name, guard.requestFacts(request));
      if (outcome !== 'done') return refused(outcome);
      logger.info('account: passkey added', { userId });
      return done('added');
    }
    const passkeyId = fields.get('passkey') ?? '';
    if (!isUuid(passkeyId)) return refused('not-found');
    if (action === 'rename') {
      const name = nameOf(fields.get('name'));
      if (name === undefined) {
        return view(session, { status: 400, errors: [`Give the passkey a name of 1 to ${NAME_MAX} characters.`] });
      }
      const outcome = await directory.renamePasskey(userId, sessionId, passkeyId, name, guard.requestFacts(request));
      return outcome === 'done' ? done('renamed') : refused(outcome);
    }
    const outcome = await directory.removePasskey(userId, sessionId, passkeyId, guard.requestFacts(request));
    if (outcome !== 'done') return refused(outcome);
    logger.info('account: passkey removed', { userId, passkeyId });
    return done('removed');
  }

  return async function passkeysPage(request, action) {
    const session = await guard.session(request);
    if (!session) return guard.signedOut('Sign in to manage your passkeys');
    if (action === '') {
      if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed('GET, HEAD');
      return view(session, doneNotice(request, NOTICES));
    }
    if (!['options', 'confirm', 'register', 'rename', 'remove'].includes(action)) {
      return guard.message(404, 'Page not found', 'There is no such page on your account.');
    }
    if (request.method !== 'POST') return methodNotAllowed('POST');
    const fields = await guard.readForm(request, session);
    if (fields instanceof LightResponse) return fields;
    return change(request, session, action, fields);
  };
}
