import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Clock,
  clientIpOf,
  DATABASE_RETRY_AFTER_SECONDS,
  decodeUtf8Strict,
  escapeHtml,
  isDatabaseUnavailable,
  type Logger,
  mediaTypeOf,
  parseParams,
  readCookie,
  silentLogger,
  systemClock,
} from '@idt/core';
import { EmailSchema, formatSessionCookie, type TokenMac } from '@idt/identity';
import type Provider from 'oidc-provider';
import type { ClientService } from '../clients/service.js';
import type { StoredClient } from '../clients/store.js';
import { decideOrganization as decideOrganizationOf, requireActive } from '../policy/organization.js';
import { pageSecurityHeaders } from '../policy/security-headers.js';
import type { SignInLockout } from '../policy/sign-in-lockout.js';
import { LOGIN_SCOPES } from '../provider/create-provider.js';
import type { AccountDirectory, StartedSession } from './directory.js';
import {
  AUTOSUBMIT_SCRIPT,
  errorSummary,
  FOCUS_SCRIPT,
  notice,
  type PageBranding,
  renderPage,
  renderUnavailablePage,
  STYLESHEET,
} from './pages.js';
import type { ConsentStore, GrantContextStore } from './stores.js';

/** Options of {@link createInteractionHandler}. */
export interface InteractionHandlerOptions {
  /** The current provider (it is rebuilt when signing keys rotate). */
  readonly provider: () => Provider;
  readonly directory: AccountDirectory;
  /** Client records (cached by the caller, evicted on change) and the scope descriptions of the consent page. */
  readonly clients: Pick<ClientService, 'findStored' | 'scopes'>;
  readonly consents: ConsentStore;
  readonly grantContexts: GrantContextStore;
  /** The API resource indicator (access-token audience). */
  readonly apiResource: string;
  /** The deployment path prefix (`''` or `/idt`). */
  readonly pathPrefix: string;
  /** The sign-in session cookie (also read by the API for sign-in hosts). */
  readonly sessionCookie: { readonly name: string };
  /** HMAC tokens; binds CSRF tokens to the interaction. */
  readonly tokens: TokenMac;
  /** The refresh-token lifetime of a new login (SPEC 5.3 precedence). */
  readonly refreshTokenLifetime: (client: StoredClient) => number;
  /**
   * The password lockout of an address (`policy/sign-in-lockout.ts`): it
   * runs the password check unless the address is locked out, and counts
   * failures only.
   */
  readonly signInLockout: SignInLockout;
  /** Take the client IP of a session from `X-Forwarded-For` (a trusted proxy sets it). */
  readonly trustProxy?: boolean;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** The sign-in page paths, relative to the deployment prefix. */
export const INTERACTION_BASE = '/connect/interaction';
/** Where the sign-in pages' stylesheet and scripts live. */
export const ASSETS_BASE = '/connect/assets';

const MAX_FORM_BYTES = 16 * 1024;

type Details = Awaited<ReturnType<Provider['interactionDetails']>>;

class FormTooLarge extends Error {}

/** A form or query holding a NUL character or bytes that are not valid UTF-8. */
class UnsafeText extends Error {}

/** Whether a query string (or form) decodes strictly: valid UTF-8, no NUL, no lone surrogate. */
function safeParams(text: string): boolean {
  try {
    parseParams(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Reads a sign-in form.
 *
 * @throws FormTooLarge past 16 KiB; UnsafeText when it is not valid UTF-8 or holds a NUL.
 */
async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = mediaTypeOf(req.headers['content-type']);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) throw new FormTooLarge();
    chunks.push(chunk as Buffer);
  }
  if (type !== 'application/x-www-form-urlencoded') return new URLSearchParams();
  const text = decodeUtf8Strict(Buffer.concat(chunks));
  if (text === undefined || !safeParams(text)) throw new UnsafeText();
  return new URLSearchParams(text);
}

/**
 * The sign-in pages: password sign-in, magic link and one-time code,
 * organization choice, consent; served as accessible HTML forms with CSRF
 * tokens and no inline scripts. Returns a node pre-handler that takes the
 * requests under `/connect/interaction` and `/connect/assets`.
 */
export function createInteractionHandler(options: InteractionHandlerOptions) {
  const { directory, clients } = options;
  const provider = () => options.provider();
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const base = `${options.pathPrefix}${INTERACTION_BASE}`;
  const assets = `${options.pathPrefix}${ASSETS_BASE}`;

  // Where this response's forms may lead: the provider (the issuer) and, at the end, the request's redirect_uri.
  const formTargets = new WeakMap<ServerResponse, string[]>();
  const send = (res: ServerResponse, status: number, html: string, extra: Record<string, string | string[]> = {}) => {
    res.writeHead(status, {
      'content-type': 'text/html; charset=utf-8',
      ...pageSecurityHeaders({ formTargets: formTargets.get(res) ?? [] }),
      ...extra,
    });
    res.end(html);
  };

  const expired = (res: ServerResponse) =>
    send(
      res,
      400,
      renderPage(
        { title: 'Sign-in expired', assets },
        `<h1>This sign-in has expired</h1>
<p>Sign-in requests last one hour and work only in the browser that started them.</p>
<p class="hint">Go back to the application and start the sign-in again.</p>`,
      ),
    );

  const unreadable = (res: ServerResponse) =>
    send(
      res,
      400,
      renderPage(
        { title: 'Sign-in problem', assets },
        `<h1>This request could not be read</h1>
<p>It contains characters that are not allowed.</p>
<p class="hint">Go back to the application and start the sign-in again.</p>`,
      ),
    );

  const csrfField = (uid: string) => `<input type="hidden" name="csrf" value="${escapeHtml(options.tokens.issue('csrf', uid))}">`;
  const csrfValid = (uid: string, form: URLSearchParams) => options.tokens.verify('csrf', form.get('csrf') ?? '') === uid;

  async function brandingFor(details: Details): Promise<PageBranding | undefined> {
    const clientId = details.params.client_id as string | undefined;
    if (!clientId) return undefined;
    const client = await clients.findStored(clientId);
    if (!client) return undefined;
    const branding = client.branding;
    return {
      displayName: branding?.displayName ?? client.name,
      tagline: branding?.tagline ?? null,
      logo:
        branding?.logo && branding.logoContentType
          ? `data:${branding.logoContentType};base64,${branding.logo.toString('base64')}`
          : null,
      themeStylesheet: branding?.themeJson ? `${base}/${details.uid}/theme.css?v=${encodeURIComponent(client.updatedAt)}` : null,
    };
  }

  function sessionCookieHeader(session: StartedSession): string {
    return formatSessionCookie(
      options.sessionCookie.name,
      session.cookieValue,
      (new Date(session.expiresAt).getTime() - clock.now().getTime()) / 1000,
    );
  }

  /**
   * Finishes the login prompt, and the consent prompt with it when that one
   * would ask nothing and decide nothing differently (see
   * {@link consentWithLogin}): the provider then issues the code on its way
   * back, without a second interaction and its two exchanges. Every way in
   * (password, one-time code, magic link) ends here; the caller has set the
   * session cookie.
   */
  async function finishLogin(
    req: IncomingMessage,
    res: ServerResponse,
    details: Details,
    session: { readonly sessionId: string; readonly userId: string },
    amr: string[],
  ) {
    const consent = await consentWithLogin(details, session.userId);
    await provider().interactionFinished(
      req,
      res,
      {
        login: { accountId: session.userId, amr, remember: true },
        idt: { sessionId: session.sessionId },
        ...(consent ? { consent } : {}),
      } as never,
      { mergeWithLastSubmission: false },
    );
  }

  /**
   * The grant of a sign-in whose consent prompt would follow only to grant
   * at once, made with the login instead, with the same decisions in the
   * same order: the organization (a bound client's enrollment included)
   * decided without a choice, then a first-party client or consent the user
   * already gave to every scope asked. Never with `prompt=consent` or a
   * `claims` request, nor when the account is already signed in to the
   * provider's session (its grant is reused, as before). `undefined` leaves
   * the consent prompt to follow and decide as it always did.
   */
  async function consentWithLogin(details: Details, userId: string): Promise<{ grantId: string } | undefined> {
    if (details.session?.accountId === userId || details.params.claims !== undefined) return undefined;
    if (
      String(details.params.prompt ?? '')
        .split(' ')
        .includes('consent')
    )
      return undefined;
    const client = await clients.findStored(String(details.params.client_id));
    if (!client) return undefined;
    const hint = details.params.organization as string | undefined;
    const decision = await decideOrganizationOf(client, userId, hint, directory);
    if (decision.kind !== 'organization') return undefined;
    if (!client.firstParty && !(await consentRemembered(details, client, userId))) return undefined;
    return { grantId: await saveGrant(details, client, userId, decision.organizationId, undefined) };
  }

  // ---------------------------------------------------------------- login pages
  async function loginPage(
    res: ServerResponse,
    details: Details,
    view: { errors?: string[]; email?: string; notice?: string; status?: number } = {},
  ) {
    const uid = details.uid;
    const branding = await brandingFor(details);
    const body = `<h1>Sign in</h1>
${errorSummary(view.errors ?? [])}${notice(view.notice)}
<form method="post" action="${base}/${uid}/login" novalidate>
${csrfField(uid)}
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(view.email ?? (details.params.login_hint as string | undefined) ?? '')}"${view.errors?.length ? ' aria-describedby="error-summary"' : ''}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>
<form method="post" action="${base}/${uid}/passwordless">
${csrfField(uid)}
<fieldset>
<legend class="sr-only">Sign in without a password</legend>
<label for="pl-email">Or get a sign-in e-mail</label>
<input id="pl-email" name="email" type="email" autocomplete="email" value="${escapeHtml(view.email ?? '')}">
<button type="submit" class="secondary" name="method" value="link">E-mail me a sign-in link</button>
<button type="submit" class="secondary" name="method" value="code">E-mail me a one-time code</button>
</fieldset>
</form>
<div class="links"><a href="${base}/${uid}/abort">Cancel and return to the application</a></div>`;
    send(
      res,
      view.status ?? 200,
      renderPage({ title: 'Sign in', assets, scripts: ['focus.js'], ...(branding ? { branding } : {}) }, body),
    );
  }

  async function codePage(res: ServerResponse, details: Details, email: string, errors: string[] = [], status = 200) {
    const uid = details.uid;
    const branding = await brandingFor(details);
    const body = `<h1>Enter your code</h1>
${errorSummary(errors)}${notice(errors.length ? undefined : `If ${email} has an account, a six-digit code is on its way. It works for 10 minutes.`)}
<form method="post" action="${base}/${uid}/code" novalidate>
${csrfField(uid)}
<input type="hidden" name="email" value="${escapeHtml(email)}">
<label for="code">One-time code</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
<button type="submit">Sign in</button>
</form>
<div class="links"><a href="${base}/${uid}">Use another way to sign in</a></div>`;
    send(
      res,
      status,
      renderPage({ title: 'Enter your code', assets, scripts: ['focus.js'], ...(branding ? { branding } : {}) }, body),
    );
  }

  async function handleLogin(req: IncomingMessage, res: ServerResponse, details: Details, form: URLSearchParams) {
    const rawEmail = (form.get('email') ?? '').trim();
    const password = form.get('password') ?? '';
    const email = EmailSchema.safeParse(rawEmail);
    if (!email.success || password === '') {
      return loginPage(res, details, {
        status: 400,
        email: rawEmail,
        errors: [!email.success ? 'Enter a valid e-mail address.' : 'Enter your password.'],
      });
    }
    const attempt = await options.signInLockout.attempt(email.data, () => directory.verifyPassword(email.data, password));
    if (attempt.outcome === 'locked') {
      return loginPage(res, details, {
        status: 429,
        email: rawEmail,
        errors: ['Too many failed attempts for this address. Wait 15 minutes, or sign in with an e-mail link.'],
      });
    }
    if (attempt.outcome === 'wrong') {
      return loginPage(res, details, { status: 400, email: rawEmail, errors: ['The e-mail address or password is incorrect.'] });
    }
    const session = await reuseOrStartSession(req, details, attempt.account, ['pwd']);
    res.setHeader('set-cookie', sessionCookieHeader(session));
    await finishLogin(req, res, details, session, ['pwd']);
  }

  /** Re-authentication of the account already signed in keeps its session; anything else starts one. */
  async function reuseOrStartSession(
    req: IncomingMessage,
    details: Details,
    userId: string,
    amr: string[],
  ): Promise<StartedSession> {
    const existing = details.session?.uid ? await provider().Session.findByUid(details.session.uid) : undefined;
    if (existing?.accountId === userId) {
      const sid = Object.values(existing.authorizations ?? {}).find((entry) => entry?.sid)?.sid;
      const cookie = readCookie(req.headers.cookie ?? null, options.sessionCookie.name);
      const current = cookie ? await directory.findSession(cookie) : undefined;
      if (sid && current && current.sessionId === sid && cookie) {
        return {
          sessionId: sid,
          userId,
          cookieValue: cookie,
          expiresAt: new Date(clock.now().getTime() + 86_400_000).toISOString(),
        };
      }
    }
    return directory.startSession(userId, {
      ip: clientIpOf(req.headers['x-forwarded-for'], req.socket.remoteAddress, options.trustProxy ?? false),
      userAgent: req.headers['user-agent'] ?? '',
      amr,
    });
  }

  async function handlePasswordless(res: ServerResponse, details: Details, form: URLSearchParams) {
    const rawEmail = (form.get('email') ?? '').trim();
    const email = EmailSchema.safeParse(rawEmail);
    if (!email.success) {
      return loginPage(res, details, {
        status: 400,
        email: rawEmail,
        errors: ['Enter a valid e-mail address to get a sign-in e-mail.'],
      });
    }
    try {
      if (form.get('method') === 'code') {
        await directory.requestCode(email.data);
        return codePage(res, details, email.data);
      }
      await directory.requestMagicLink(email.data, `${base}/${details.uid}/link`);
    } catch (error) {
      if ((error as { code?: string }).code === 'RateLimit.Exceeded') {
        return loginPage(res, details, {
          status: 429,
          email: rawEmail,
          errors: ['Too many sign-in e-mails for this address. Wait 15 minutes before asking again.'],
        });
      }
      throw error;
    }
    const branding = await brandingFor(details);
    send(
      res,
      200,
      renderPage(
        { title: 'Check your e-mail', assets, ...(branding ? { branding } : {}) },
        `<h1>Check your e-mail</h1>
${notice(`If ${email.data} has an account, a sign-in link is on its way. It works for 15 minutes, in this browser.`)}
<div class="links"><a href="${base}/${details.uid}">Use another way to sign in</a></div>`,
      ),
    );
  }

  async function handleCode(req: IncomingMessage, res: ServerResponse, details: Details, form: URLSearchParams) {
    const email = EmailSchema.safeParse((form.get('email') ?? '').trim());
    const code = (form.get('code') ?? '').trim();
    if (!email.success) return loginPage(res, details, { status: 400, errors: ['Enter a valid e-mail address.'] });
    if (!/^\d{6}$/.test(code)) return codePage(res, details, email.data, ['Enter the six digits of the code.'], 400);
    const session = await directory.verifyCode(email.data, code, {
      ip: clientIpOf(req.headers['x-forwarded-for'], req.socket.remoteAddress, options.trustProxy ?? false),
      userAgent: req.headers['user-agent'] ?? '',
    });
    if (!session) return codePage(res, details, email.data, ['The code is wrong or has expired. Ask for a new one.'], 400);
    res.setHeader('set-cookie', sessionCookieHeader(session));
    await finishLogin(req, res, details, session, ['otp']);
  }

  /** The magic link's verification (an API route) started a session and sent the browser back here. */
  async function handleLinkReturn(req: IncomingMessage, res: ServerResponse, details: Details) {
    const cookie = readCookie(req.headers.cookie ?? null, options.sessionCookie.name);
    const session = cookie ? await directory.findSession(cookie) : undefined;
    if (!session || !cookie) {
      return loginPage(res, details, { status: 400, errors: ['That sign-in link did not work here. Ask for a new one.'] });
    }
    // The link's verification already set the session cookie.
    await finishLogin(req, res, details, session, ['email']);
  }

  // ---------------------------------------------------- organization and consent
  async function deny(req: IncomingMessage, res: ServerResponse, description: string) {
    await provider().interactionFinished(
      req,
      res,
      { error: 'access_denied', error_description: description },
      { mergeWithLastSubmission: false },
    );
  }

  /** Decides the organization of the grant, or answers (error, choice page). Returns `false` when it answered. */
  async function decideOrganization(
    req: IncomingMessage,
    res: ServerResponse,
    details: Details,
    client: StoredClient,
    userId: string,
    chosen: string | null | undefined,
  ): Promise<string | null | false> {
    const hint = chosen ?? (details.params.organization as string | undefined);
    const decision = await decideOrganizationOf(client, userId, hint, directory);
    if (decision.kind === 'organization') return decision.organizationId;
    if (decision.kind === 'deny') await deny(req, res, decision.description);
    else await organizationPage(res, details, [...decision.organizations]);
    return false;
  }

  async function organizationPage(
    res: ServerResponse,
    details: Details,
    organizations: Array<{ id: string; name: string }>,
    errors: string[] = [],
  ) {
    const uid = details.uid;
    const branding = await brandingFor(details);
    const body = `<h1>Choose an organization</h1>
${errorSummary(errors)}
<form method="post" action="${base}/${uid}/organization">
${csrfField(uid)}
<fieldset>
<legend>Which organization do you want to work in?</legend>
${organizations
  .map(
    (
      organization,
      index,
    ) => `<div class="choice"><input type="radio" id="org-${index}" name="organization" value="${escapeHtml(organization.id)}"${index === 0 ? ' checked' : ''}>
<label for="org-${index}">${escapeHtml(organization.name)}</label></div>`,
  )
  .join('\n')}
<div class="choice"><input type="radio" id="org-none" name="organization" value="none"><label for="org-none">No organization</label></div>
</fieldset>
<button type="submit">Continue</button>
</form>
<div class="links"><a href="${base}/${uid}/abort">Cancel and return to the application</a></div>`;
    send(
      res,
      errors.length ? 400 : 200,
      renderPage({ title: 'Choose an organization', assets, ...(branding ? { branding } : {}) }, body),
    );
  }

  function requestedScopes(details: Details, client: StoredClient): { oidc: string[]; api: string[] } {
    const allowed = new Set(client.scopes);
    const requested = String(details.params.scope ?? '')
      .split(' ')
      .filter((scope) => scope && allowed.has(scope));
    return {
      oidc: requested.filter((scope) => LOGIN_SCOPES.has(scope)),
      api: requested.filter((scope) => !LOGIN_SCOPES.has(scope)),
    };
  }

  async function consentPage(res: ServerResponse, details: Details, client: StoredClient, organization: string | null) {
    const uid = details.uid;
    const branding = await brandingFor(details);
    const descriptions = new Map((await clients.scopes()).map((row) => [row.scope, row.description]));
    const scopes = requestedScopes(details, client);
    const body = `<h1>Allow ${escapeHtml(branding?.displayName ?? client.name)}?</h1>
<p>${escapeHtml(branding?.displayName ?? client.name)} asks to:</p>
<ul class="scopes">${[...scopes.oidc, ...scopes.api]
      .filter((scope) => scope !== 'openid')
      .map((scope) => `<li>${escapeHtml(descriptions.get(scope) ?? scope)}</li>`)
      .join('')}<li>Know who you are</li></ul>
<form method="post" action="${base}/${uid}/consent">
${csrfField(uid)}
<input type="hidden" name="organization" value="${escapeHtml(organization ?? 'none')}">
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>
<p class="hint">You can withdraw this later from <a href="${escapeHtml(`${options.pathPrefix}/connect/account`)}" target="_blank" rel="noopener">your account</a>.</p>`;
    send(res, 200, renderPage({ title: 'Allow access', assets, ...(branding ? { branding } : {}) }, body));
  }

  /**
   * Saves the grant of what the request asks for (the scopes the client may
   * have, the claims the consent prompt found missing): `existingId`'s grant
   * when it works in the same organization, else a new one with its context.
   */
  async function saveGrant(
    details: Details,
    client: StoredClient,
    userId: string,
    organization: string | null,
    existingId: string | undefined,
  ): Promise<string> {
    const scopes = requestedScopes(details, client);
    const existing = existingId ? await provider().Grant.find(existingId) : undefined;
    const context = existingId ? await options.grantContexts.get(existingId) : undefined;
    const reuse = existing && context && context.organizationId === organization;
    const grant = reuse ? existing : new (provider().Grant)({ accountId: userId, clientId: client.clientId });
    if (scopes.oidc.length) grant.addOIDCScope(scopes.oidc.join(' '));
    // Access tokens are for the API and carry the login scopes as well (userinfo reads them).
    const resourceScopes = [...scopes.oidc, ...scopes.api];
    if (resourceScopes.length) grant.addResourceScope(options.apiResource, resourceScopes.join(' '));
    const missingClaims = (details.prompt.details as { missingOIDCClaims?: string[] }).missingOIDCClaims;
    if (missingClaims?.length) grant.addOIDCClaims(missingClaims);
    const grantId = await grant.save();
    if (!reuse) {
      const lifetime = options.refreshTokenLifetime(client);
      await options.grantContexts.set(
        grantId,
        { organizationId: organization, refreshTokenLifetime: lifetime },
        new Date(clock.now().getTime() + 31_622_400_000),
      );
    }
    return grantId;
  }

  async function grantAndFinish(
    req: IncomingMessage,
    res: ServerResponse,
    details: Details,
    client: StoredClient,
    userId: string,
    organization: string | null,
  ) {
    const grantId = await saveGrant(details, client, userId, organization, details.grantId);
    await provider().interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  async function handleConsentPrompt(req: IncomingMessage, res: ServerResponse, details: Details) {
    const client = await clients.findStored(String(details.params.client_id));
    const userId = details.session?.accountId;
    if (!client || !userId) return expired(res);
    const organization = await decideOrganization(req, res, details, client, userId, undefined);
    if (organization === false) return;
    await consentOrFinish(req, res, details, client, userId, organization);
  }

  /** Whether the user already consented to every scope this request asks of a (third-party) client. */
  async function consentRemembered(details: Details, client: StoredClient, userId: string): Promise<boolean> {
    const scopes = requestedScopes(details, client);
    const remembered = new Set((await options.consents.find(userId, client.clientId)) ?? []);
    return [...scopes.oidc, ...scopes.api].every((scope) => remembered.has(scope));
  }

  async function consentOrFinish(
    req: IncomingMessage,
    res: ServerResponse,
    details: Details,
    client: StoredClient,
    userId: string,
    organization: string | null,
  ) {
    if (!client.firstParty && !(await consentRemembered(details, client, userId))) {
      return consentPage(res, details, client, organization);
    }
    await grantAndFinish(req, res, details, client, userId, organization);
  }

  // ------------------------------------------------------------------- routing
  async function serveAsset(req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean> {
    const headers = { 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' };
    if (path === '/idt.css') {
      res.writeHead(200, { ...headers, 'content-type': 'text/css; charset=utf-8' });
      res.end(req.method === 'HEAD' ? undefined : STYLESHEET);
      return true;
    }
    if (path === '/autosubmit.js' || path === '/focus.js') {
      res.writeHead(200, { ...headers, 'content-type': 'text/javascript; charset=utf-8' });
      res.end(req.method === 'HEAD' ? undefined : path === '/focus.js' ? FOCUS_SCRIPT : AUTOSUBMIT_SCRIPT);
      return true;
    }
    return false;
  }

  /**
   * The theme colors of the pending sign-in's client. Served under the
   * interaction (its cookie is required), so there is no anonymous read of
   * branding by client id (SPEC 4.3).
   */
  async function themeStylesheet(res: ServerResponse, details: Details) {
    const client = await clients.findStored(String(details.params.client_id));
    const colors = client?.branding?.themeJson;
    if (!colors) {
      res.writeHead(404, { 'content-type': 'text/plain', 'cache-control': 'no-store' });
      res.end('Not Found');
      return;
    }
    const css = `:root{--primary:${colors.light.primary};--primary-foreground:${colors.light.primaryForeground}}
@media (prefers-color-scheme:dark){:root{--primary:${colors.dark.primary};--primary-foreground:${colors.dark.primaryForeground}}}
`;
    res.writeHead(200, {
      'content-type': 'text/css; charset=utf-8',
      'cache-control': 'private, max-age=3600',
      'x-content-type-options': 'nosniff',
    });
    res.end(css);
  }

  async function route(req: IncomingMessage, res: ServerResponse, uid: string, action: string) {
    let details: Details;
    try {
      details = await provider().interactionDetails(req, res);
    } catch (error) {
      if (isDatabaseUnavailable(error)) throw error;
      logger.info('sign-in page for an unknown or expired interaction', { error });
      return expired(res);
    }
    if (details.uid !== uid) return expired(res);
    const redirectUri = details.params.redirect_uri;
    formTargets.set(res, [provider().issuer, typeof redirectUri === 'string' ? redirectUri : undefined].filter(isString));
    const method = req.method ?? 'GET';
    if (method === 'GET' && action === '') {
      return details.prompt.name === 'login' ? loginPage(res, details) : handleConsentPrompt(req, res, details);
    }
    if (method === 'GET' && action === 'theme.css') return themeStylesheet(res, details);
    if (method === 'GET' && action === 'abort') return deny(req, res, 'The user cancelled the sign-in.');
    if (method === 'GET' && action === 'link') return handleLinkReturn(req, res, details);
    if (method !== 'POST') {
      res.writeHead(405, { allow: 'GET, POST', 'content-type': 'text/plain' });
      res.end('Method Not Allowed');
      return;
    }
    let form: URLSearchParams;
    try {
      form = await readForm(req);
    } catch (error) {
      if (error instanceof FormTooLarge) {
        res.writeHead(413, { 'content-type': 'text/plain' });
        res.end('Content Too Large');
        return;
      }
      if (error instanceof UnsafeText) return unreadable(res);
      throw error;
    }
    if (!csrfValid(uid, form)) {
      return send(
        res,
        403,
        renderPage({ title: 'Sign-in problem', assets }, '<h1>This form has expired</h1><p>Reload the page and try again.</p>'),
      );
    }
    if (action === 'login' && details.prompt.name === 'login') return handleLogin(req, res, details, form);
    if (action === 'passwordless' && details.prompt.name === 'login') return handlePasswordless(res, details, form);
    if (action === 'code' && details.prompt.name === 'login') return handleCode(req, res, details, form);
    const client = await clients.findStored(String(details.params.client_id));
    const userId = details.session?.accountId;
    if (details.prompt.name !== 'consent' || !client || !userId) return expired(res);
    if (action === 'organization') {
      const value = form.get('organization') ?? '';
      const organizations = await directory.activeOrganizations(userId);
      if (value !== 'none' && !organizations.some((organization) => organization.id === value)) {
        return organizationPage(res, details, organizations, ['Choose one of your organizations.']);
      }
      const organization = await decideOrganization(req, res, details, client, userId, value);
      if (organization === false) return;
      return consentOrFinish(req, res, details, client, userId, organization);
    }
    if (action === 'consent') {
      if (form.get('decision') !== 'approve') return deny(req, res, 'The user denied access.');
      const organizationValue = form.get('organization') ?? 'none';
      const gate = await requireActive(
        userId,
        client.organizationId ?? (organizationValue === 'none' ? null : organizationValue),
        directory,
      );
      if (gate.kind === 'deny') return deny(req, res, gate.description);
      const organization = gate.organizationId;
      const scopes = requestedScopes(details, client);
      await options.consents.remember(userId, client.clientId, [...scopes.oidc, ...scopes.api], clock.now());
      return grantAndFinish(req, res, details, client, userId, organization);
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('Not Found');
  }

  return async function interactionHandler(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname.startsWith(`${assets}/`)) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return false;
      return serveAsset(req, res, url.pathname.slice(assets.length));
    }
    if (!url.pathname.startsWith(`${base}/`)) return false;
    const [uid = '', action = '', ...rest] = url.pathname.slice(base.length + 1).split('/');
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(uid) || rest.length > 0) return false;
    try {
      if (!safeParams(url.search)) {
        unreadable(res);
        return true;
      }
      await route(req, res, uid, action);
    } catch (error) {
      logger.error('sign-in page failed', { error });
      if (!res.headersSent && isDatabaseUnavailable(error)) {
        send(res, 503, renderUnavailablePage(assets), { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) });
      } else if (!res.headersSent) {
        send(
          res,
          500,
          renderPage({ title: 'Sign-in problem', assets }, '<h1>Something went wrong</h1><p>Try again in a moment.</p>'),
        );
      }
    }
    return true;
  };
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}
