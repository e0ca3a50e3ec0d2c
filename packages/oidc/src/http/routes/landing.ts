import { createHash, randomBytes } from 'node:crypto';
import {
  compareCodeUnits,
  defineRoute,
  type Environment,
  html,
  IDT_ICON_SVG,
  LightResponse,
  markup,
  type Route,
} from '@idt/core';
import { ProblemError } from '@idt/problem';
import type { StoredClient } from '../../clients/store.js';
import { ASSETS_BASE } from '../../interactions/handler.js';
import { renderPage } from '../../interactions/pages.js';
import { pageSecurityHeaders } from '../../policy/security-headers.js';
import { OIDC_ROUTES } from '../../provider/create-provider.js';

/** Options of {@link createLandingRoutes}. */
export interface LandingOptions {
  readonly environment: Environment;
  /** The issuer (public base URL, prefix included). */
  readonly issuer: string;
  /** The deployment path prefix (`''` or `/idt`). */
  readonly pathPrefix: string;
  /** Every client (the demo application is looked up among them). */
  listClients(): Promise<readonly StoredClient[]>;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The first redirect URI of a client that points at this machine (`localhost`, `127.0.0.1`, `[::1]`). */
function loopbackRedirect(client: StoredClient): string | undefined {
  return client.redirectUris.find((uri) => {
    try {
      return LOOPBACK_HOSTS.has(new URL(uri).hostname);
    } catch {
      return false;
    }
  });
}

/**
 * The demo application: the oldest active first-party application (seeded,
 * as `idt demo` and `idt seed` register them) with a redirect URI on this
 * machine. `idt demo` registers "Dashboard" with `http://localhost:3000/bff/callback`.
 */
export function findDemoClient(clients: readonly StoredClient[]): { client: StoredClient; redirectUri: string } | undefined {
  const candidates = [...clients]
    .filter((client) => client.kind === 'application' && client.firstParty && client.status === 'active')
    .sort((a, b) => compareCodeUnits(a.createdAt, b.createdAt));
  for (const client of candidates) {
    const redirectUri = loopbackRedirect(client);
    if (redirectUri) return { client, redirectUri };
  }
  return undefined;
}

/**
 * An authorization URL for the demo application with a fresh PKCE challenge
 * and state. Its verifier is thrown away: the link shows the sign-in pages;
 * the application at the redirect URI completes the flow only for sign-ins it
 * started itself.
 */
export function demoAuthorizationUrl(issuer: string, client: StoredClient, redirectUri: string): string {
  const verifier = randomBytes(32).toString('base64url');
  const scope = ['openid', 'profile', 'email'].filter((name) => client.scopes.includes(name));
  const url = new URL(`${issuer}${OIDC_ROUTES.authorization}`);
  url.search = new URLSearchParams({
    client_id: client.clientId,
    response_type: 'code',
    scope: (scope.length ? scope : ['openid']).join(' '),
    redirect_uri: redirectUri,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: randomBytes(16).toString('base64url'),
  }).toString();
  return url.href;
}

function wantsHtml(accept: string | null): boolean {
  return accept !== null && /\btext\/html\b/i.test(accept);
}

/**
 * `GET /`: in Development, a landing page in the sign-in pages' style that
 * links the API reference, the OpenAPI document, the discovery document, the
 * account page and a "try sign-in" link for the demo application (see
 * {@link findDemoClient}). Elsewhere it stays a 404: a JSON problem, or a
 * short HTML pointer to the discovery document when a browser asks for HTML.
 */
export function createLandingRoutes(options: LandingOptions): Route[] {
  const prefix = options.pathPrefix;
  const assets = `${prefix}${ASSETS_BASE}`;
  const headers = pageSecurityHeaders();
  return [
    defineRoute({
      method: 'GET',
      path: '/favicon.ico',
      operationId: 'getFavicon',
      summary: 'The icon browsers ask for on every page',
      auth: 'anonymous',
      ratePolicy: false,
      hidden: true,
      responses: { 200: { description: 'SVG image', contentType: 'image/svg+xml' } },
      // Browsers ask the origin's /favicon.ico for any page that names no icon (a problem document
      // they display, the API viewer): an answer, not a 404 and its console error. idt's own pages
      // name the icon inline; under a path prefix this serves <prefix>/favicon.ico.
      handler: () =>
        new LightResponse(IDT_ICON_SVG, {
          headers: {
            'content-type': 'image/svg+xml',
            'cache-control': 'public, max-age=86400',
            'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
          },
        }),
    }),
    defineRoute({
      method: 'GET',
      path: '/',
      operationId: 'getLandingPage',
      summary: 'The landing page (Development only)',
      auth: 'anonymous',
      hidden: true,
      responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
      handler: async ({ headers: requestHeaders }) => {
        if (options.environment !== 'Development') {
          if (!wantsHtml(requestHeaders.get('accept'))) throw new ProblemError('Http.NotFound');
          return html(
            renderPage(
              { title: 'idt', assets },
              markup`<h1>Nothing to see here</h1>
<p>This is an identity service. Applications sign in through it; there is no page at this address.</p>
<div class="links"><a href="${prefix}/.well-known/openid-configuration">OpenID Connect discovery document</a></div>`,
            ),
            { status: 404, headers },
          );
        }
        // While setup is required the setup gate answers here (a page with how to finish setup for browsers).
        const demo = findDemoClient(await options.listClients());
        const tryIt = demo
          ? markup`<h2>Try a sign-in</h2>
<p><a href="${demoAuthorizationUrl(options.issuer, demo.client, demo.redirectUri)}">Sign in to ${demo.client.name}</a></p>
<p class="hint">Client <code>${demo.client.clientId}</code>; after sign-in you go to <code>${demo.redirectUri}</code>, where the application must be running. For a whole sign-in that ends in a token, run <code>npx idt sign-in --from cli.env</code> (written by <code>npx idt demo</code>).</p>`
          : markup`<h2>Try a sign-in</h2>
<p class="hint">No demo application yet: run <code>npx idt demo</code> to register one (a first-party application with a <code>localhost</code> redirect URI), then reload this page.</p>`;
        const body = markup`<h1>idt is running</h1>
<p class="hint">Development environment · issuer <code>${options.issuer}</code></p>
<h2>For developers</h2>
<ul>
<li><a href="${prefix}/scalar">API reference</a> (Scalar), with the OpenID endpoints</li>
<li><a href="${prefix}/openapi/v1.json">OpenAPI document</a></li>
<li><a href="${prefix}/.well-known/openid-configuration">OpenID Connect discovery document</a></li>
<li><a href="${prefix}/health">Health</a></li>
</ul>
${tryIt}
<h2>Your account</h2>
<p><a href="${prefix}/connect/account">Account page</a>: profile, sessions, applications you allowed.</p>
<p class="hint">A token for scripts: <code>npx idt token --from service.env</code>.</p>`;
        return html(renderPage({ title: 'idt (Development)', assets, wide: true }, body), { headers });
      },
    }),
  ];
}
