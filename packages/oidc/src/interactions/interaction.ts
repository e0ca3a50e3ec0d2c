import {
  type AuditEntry,
  type Clock,
  clientIpOf,
  LightResponse,
  type Logger,
  markup,
  readCookie,
  type SafeHtml,
} from '@idt/core';
import { formatSessionCookie, type TokenMac } from '@idt/identity';
import type Provider from 'oidc-provider';
import type { InteractionResults } from 'oidc-provider';
import type { ClientService } from '../clients/service.js';
import type { StoredClient } from '../clients/store.js';
import type { SignInFederation } from '../federation.js';
import { pageSecurityHeaders } from '../policy/security-headers.js';
import type { SignInLockout } from '../policy/sign-in-lockout.js';
import type { AccountDirectory, StartedSession } from './directory.js';
import type { PageRequest } from './page-request.js';
import { type PageBranding, type PageOptions, renderPage } from './pages.js';
import type { InteractionDetails, ProviderExchange } from './provider-exchange.js';
import type { ConsentStore, GrantContextStore } from './stores.js';

/** Writes one sign-in record on the audit trail (in a small transaction of its own: `sign-in-audit.ts`). */
export type SignInAuditRecorder = (entry: AuditEntry) => Promise<void>;

/** What every step of a sign-in uses: the provider, the directory, the stores and the settings. */
export interface SignInServices {
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
  /** The sign-in session cookie's name. */
  readonly sessionCookieName: string;
  /** HMAC tokens; binds CSRF tokens to the interaction. */
  readonly tokens: TokenMac;
  /** The refresh-token lifetime of a new login (SPEC 5.3 precedence). */
  readonly refreshTokenLifetime: (client: StoredClient) => number;
  /** The password lockout of an address (`policy/sign-in-lockout.ts`). */
  readonly signInLockout: SignInLockout;
  readonly trustProxy: boolean;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The sign-in pages' path, prefix included (`/idt/connect/interaction`). */
  readonly base: string;
  /** The sign-in assets' path, prefix included (`/idt/connect/assets`). */
  readonly assets: string;
  /** Sign-in at other identity providers, when a federation module fills the slot (`federation.ts`). */
  readonly federation: () => SignInFederation | undefined;
  /** Records sign-ins and refused sign-ins on the audit trail (`sign-in-audit.ts`); absent without a trail. */
  readonly audit?: SignInAuditRecorder;
}

/** A page's options besides its assets path (the interaction knows it). */
export type StepPageOptions = Omit<PageOptions, 'assets' | 'branding'>;

/**
 * One request to a pending interaction: its details, the request, and what
 * every step does with them (render a page, check the form's CSRF token,
 * finish the interaction, set the session cookie). The steps
 * (`steps/*.ts`) take one and answer the request.
 */
export class Interaction {
  readonly services: SignInServices;
  readonly request: PageRequest;
  readonly details: InteractionDetails;
  readonly exchange: ProviderExchange;
  /** Where this interaction's forms may lead: the provider (the issuer) and, at the end, the request's redirect_uri. */
  readonly formTargets: readonly string[];

  constructor(services: SignInServices, request: PageRequest, exchange: ProviderExchange, details: InteractionDetails) {
    this.services = services;
    this.request = request;
    this.exchange = exchange;
    this.details = details;
    const redirectUri = details.params.redirect_uri;
    this.formTargets = typeof redirectUri === 'string' ? [services.provider().issuer, redirectUri] : [services.provider().issuer];
  }

  get uid(): string {
    return this.details.uid;
  }

  /** The path of one of this interaction's pages (`''` for the interaction itself). */
  path(action = ''): string {
    return action ? `${this.services.base}/${this.details.uid}/${action}` : `${this.services.base}/${this.details.uid}`;
  }

  /** The client id the authorization request named. */
  get clientId(): string | undefined {
    return this.details.params.client_id as string | undefined;
  }

  /** The client of the authorization request. */
  client(): Promise<StoredClient | undefined> {
    return this.services.clients.findStored(String(this.details.params.client_id));
  }

  /** The address the sign-in session is recorded with. */
  clientIp(): string | undefined {
    return clientIpOf(this.request.headers.get('x-forwarded-for'), this.request.remoteAddress, this.services.trustProxy);
  }

  /** The sign-in session cookie the browser sent. */
  sessionCookie(): string | undefined {
    return readCookie(this.request.headers.get('cookie'), this.services.sessionCookieName);
  }

  /** A hidden field with the CSRF token of this interaction. */
  csrfField(): SafeHtml {
    return markup`<input type="hidden" name="csrf" value="${this.services.tokens.issue('csrf', this.details.uid)}">`;
  }

  /** Whether a form carries this interaction's CSRF token. */
  csrfValid(form: URLSearchParams): boolean {
    return this.services.tokens.verify('csrf', form.get('csrf') ?? '') === this.details.uid;
  }

  /** The client's look on the pages, when the request names a known client. */
  async branding(): Promise<PageBranding | undefined> {
    const clientId = this.clientId;
    if (!clientId) return undefined;
    const client = await this.services.clients.findStored(clientId);
    if (!client) return undefined;
    const branding = client.branding;
    return {
      displayName: branding?.displayName ?? client.name,
      tagline: branding?.tagline ?? null,
      logo:
        branding?.logo && branding.logoContentType
          ? `data:${branding.logoContentType};base64,${branding.logo.toString('base64')}`
          : null,
      themeStylesheet: branding?.themeJson ? `${this.path('theme.css')}?v=${encodeURIComponent(client.updatedAt)}` : null,
    };
  }

  /** A page of this interaction, in the client's look when `branding` is given. */
  page(status: number, options: StepPageOptions, body: SafeHtml, branding?: PageBranding): LightResponse {
    const html = renderPage({ ...options, assets: this.services.assets, ...(branding ? { branding } : {}) }, body);
    return pageResponse(status, html, this.formTargets);
  }

  /** A page of this interaction in the client's look. */
  async brandedPage(status: number, options: StepPageOptions, body: SafeHtml): Promise<LightResponse> {
    return this.page(status, options, body, await this.branding());
  }

  /** Stores the interaction's result and answers the redirect back to the provider. */
  finish(result: InteractionResults, mergeWithLastSubmission: boolean): Promise<LightResponse> {
    return this.exchange.finish(this.services.provider(), result, mergeWithLastSubmission);
  }

  /** Ends the interaction with `access_denied`. */
  deny(description: string): Promise<LightResponse> {
    return this.finish({ error: 'access_denied', error_description: description }, false);
  }

  /** Sets the sign-in session cookie on the answer. */
  setSessionCookie(session: StartedSession): void {
    this.exchange.setCookie(
      formatSessionCookie(
        this.services.sessionCookieName,
        session.cookieValue,
        (new Date(session.expiresAt).getTime() - this.services.clock.now().getTime()) / 1000,
      ),
    );
  }
}

/** An HTML page with the sign-in pages' security headers; its forms may lead to `formTargets`. */
export function pageResponse(
  status: number,
  html: string,
  formTargets: readonly string[],
  extra: Record<string, string> = {},
): LightResponse {
  return new LightResponse(html, {
    status,
    headers: { 'content-type': 'text/html; charset=utf-8', ...pageSecurityHeaders({ formTargets }), ...extra },
  });
}

/** A short plain-text answer (405, 413, 404 of the sign-in pages). */
export function plainText(status: number, text: string, headers: Record<string, string> = {}): LightResponse {
  return new LightResponse(text, { status, headers: { 'content-type': 'text/plain', ...headers } });
}
