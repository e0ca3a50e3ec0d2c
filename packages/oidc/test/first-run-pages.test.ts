import { bootstrapAdmin, createTestIdt, expectProblem, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const DEMO_REDIRECT = 'http://localhost:3000/bff/callback';

/** Every `href` of a page, decoded. */
function links(html: string): string[] {
  return [...html.matchAll(/href="([^"]*)"/g)].map((match) => (match[1] as string).replace(/&amp;/g, '&'));
}

function expectPageHeaders(response: Response) {
  const csp = response.headers.get('content-security-policy') ?? '';
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(response.headers.get('x-frame-options')).toBe('DENY');
  expect(response.headers.get('cache-control')).toBe('no-store');
}

describe.each(testDialects())('first-run pages on %s', (dialect) => {
  describe('in Development', () => {
    let server: TestIdt;
    beforeAll(async () => {
      server = await createTestIdt({ dialect, env: { IDT_ENVIRONMENT: 'Development' } });
    });
    afterAll(async () => {
      await server?.close();
    });

    it('answers 503 Setup.Required with how to finish setup: a problem for API clients, a page for browsers', async () => {
      const problem = await expectProblem(await server.fetch('/v1/identity/users/me'), 503, 'Setup.Required');
      expect(problem.detail).toContain('npx idt setup');
      expect(problem.detail).toContain('POST /v1/identity/setup/admin');
      expect(problem.exception).toBeUndefined();
      await expectProblem(await server.fetch('/'), 503, 'Setup.Required');

      const landing = await server.fetch('/', { headers: { accept: 'text/html' } });
      expect(landing.status).toBe(503);
      expect(landing.headers.get('content-security-policy')).toContain("default-src 'none'");
      const html = await landing.text();
      expect(html).toContain('<h1>Setup is not finished</h1>');
      expect(html).toContain('npx idt demo');
    });

    it('serves a landing page linking the API reference, the documents and a sign-in of the demo application', async () => {
      await bootstrapAdmin(server);
      const before = await (await server.fetch('/')).text();
      expect(before).toContain('No demo application yet');
      // What `idt demo` registers: a first-party (seeded) application with a localhost redirect URI.
      const { client } = await server.idt.services.oidc.clients.register(
        { userId: null, platformAdmin: true },
        null,
        { kind: 'application', name: 'Dashboard <demo>', redirectUris: [DEMO_REDIRECT], scopes: ['openid', 'profile', 'email'] },
        { firstParty: true },
      );

      const response = await server.fetch('/', { headers: { accept: 'text/html' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/html');
      expectPageHeaders(response);
      const html = await response.text();
      expect(html).not.toContain('Setup is not finished');
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
      // Escaped output: the client name's markup is text.
      expect(html).toContain('Dashboard &lt;demo&gt;');
      expect(html).not.toContain('Dashboard <demo>');
      const hrefs = links(html);
      for (const path of ['/scalar', '/openapi/v1.json', '/.well-known/openid-configuration', '/connect/account']) {
        expect(hrefs).toContain(path);
      }
      const trySignIn = hrefs.find((href) => href.includes('/connect/authorize'));
      expect(trySignIn).toBeDefined();
      const url = new URL(trySignIn as string);
      expect(url.origin).toBe(server.origin);
      expect(url.searchParams.get('client_id')).toBe(client.clientId);
      expect(url.searchParams.get('redirect_uri')).toBe(DEMO_REDIRECT);
      expect(url.searchParams.get('code_challenge_method')).toBe('S256');

      // The link really opens the sign-in page.
      const authorize = await server.send(url, { redirect: 'manual' });
      expect(authorize.status).toBe(303);
      const signIn = await server.send(new URL(authorize.headers.get('location') as string, server.origin), {
        headers: {
          cookie: authorize.headers
            .getSetCookie()
            .map((cookie) => cookie.split(';')[0])
            .join('; '),
        },
      });
      expect(await signIn.text()).toContain('<h1>Sign in</h1>');
    });
  });

  describe('outside Development', () => {
    let server: TestIdt;
    let clientId: string;
    beforeAll(async () => {
      server = await createTestIdt({ dialect });
      await bootstrapAdmin(server);
      const { client } = await server.idt.services.oidc.clients.register(
        { userId: null, platformAdmin: true },
        null,
        {
          kind: 'application',
          name: 'Reports',
          redirectUris: ['https://reports.example.com/callback'],
          scopes: ['openid', 'email'],
        },
        { firstParty: true },
      );
      clientId = client.clientId;
    });
    afterAll(async () => {
      await server?.close();
    });

    it('keeps GET / a 404: a problem for API clients, a short pointer for browsers', async () => {
      await expectProblem(await server.fetch('/'), 404, 'Http.NotFound');
      const page = await server.fetch('/', { headers: { accept: 'text/html,application/xhtml+xml' } });
      expect(page.status).toBe(404);
      expectPageHeaders(page);
      const html = await page.text();
      expect(links(html)).toContain('/.well-known/openid-configuration');
      expect(html).not.toContain('/scalar');
    });

    it('shows an unknown client as a sign-in page with a sentence, the code and the trace id, and no way back', async () => {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const response = await server.fetch(
        '/connect/authorize?client_id=nobody&response_type=code&scope=openid&redirect_uri=https%3A%2F%2Fevil.example%2Fcb',
        { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } },
      );
      expect(response.status).toBe(400);
      expectPageHeaders(response);
      const html = await response.text();
      expect(html).toContain('<link rel="stylesheet" href="/connect/assets/idt.css">');
      expect(html).toContain('is not known to this sign-in service');
      expect(html).toContain('<code>invalid_client</code>');
      expect(html).toContain(`<code>${traceId}</code>`);
      expect(html).not.toContain('evil.example');
      expect(html).not.toContain('Back to');
    });

    it('links back to the application (its registered origin, never the request redirect_uri) for a wrong redirect URI', async () => {
      const response = await server.fetch(
        `/connect/authorize?client_id=${clientId}&response_type=code&scope=openid&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256&redirect_uri=https%3A%2F%2Fevil.example%2Fcb`,
        { headers: { 'x-request-id': 'req-abc-123' } },
      );
      expect(response.status).toBe(400);
      const html = await response.text();
      expect(html).toContain('<code>invalid_redirect_uri</code>');
      expect(html).toContain('has not registered');
      expect(html).toContain('<code>req-abc-123</code>');
      expect(links(html)).toContain('https://reports.example.com/');
      expect(html).toContain('Back to Reports');
      expect(html).not.toContain('evil.example');
    });

    it('generates a trace id when the request names none, and never echoes an unsafe request id', async () => {
      const response = await server.fetch('/connect/authorize?client_id=nobody', {
        headers: { 'x-request-id': '<script>alert(1)</script>' },
      });
      const html = await response.text();
      expect(html).not.toContain('<script>alert');
      expect(html).toMatch(/Trace id<\/dt><dd><code>[0-9a-f]{32}<\/code>/);
      expect(response.headers.get('x-trace-id')).toMatch(/^[0-9a-f]{32}$/);
    });

    it('documents the OpenID endpoints with an OAuth 2 (PKCE) scheme pointing at this server', async () => {
      const document = (await (await server.fetch('/openapi/v1.json')).json()) as Record<string, any>;
      const paths = document.paths as Record<string, Record<string, any>>;
      expect(paths['/.well-known/openid-configuration']?.get?.tags).toEqual(['OpenID Connect']);
      expect(paths['/connect/authorize']?.get?.parameters.map((parameter: { name: string }) => parameter.name)).toEqual(
        expect.arrayContaining(['client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'state']),
      );
      expect(Object.keys(paths['/connect/token']?.post?.requestBody.content)).toEqual(['application/x-www-form-urlencoded']);
      expect(paths['/connect/userinfo']?.get?.security).toEqual([{ bearerAuth: [] }, { oauth2: ['openid'] }]);
      expect(paths['/connect/logout']?.get).toBeDefined();
      expect(paths['/connect/revoke']?.post).toBeDefined();
      expect(paths['/connect/introspect']?.post).toBeDefined();
      expect(paths['/.well-known/jwks.json']?.get).toBeDefined();

      const schemes = document.components.securitySchemes as Record<string, any>;
      const flow = schemes.oauth2.flows.authorizationCode;
      expect(flow.authorizationUrl).toBe(`${server.url}/connect/authorize`);
      expect(flow.tokenUrl).toBe(`${server.url}/connect/token`);
      expect(flow['x-usePkce']).toBe('SHA-256');
      expect(Object.keys(flow.scopes)).toEqual(expect.arrayContaining(['openid', 'profile', 'email', 'users.read']));
      expect(schemes.openIdConnect.openIdConnectUrl).toBe(`${server.url}/.well-known/openid-configuration`);
      expect(document.security).toContainEqual({ oauth2: [] });
      const tag = (document.tags as Array<{ name: string; description?: string }>).find(
        (entry) => entry.name === 'OpenID Connect',
      );
      expect(tag?.description).toContain('npx idt token');
      expect(tag?.description).toContain('npx idt demo');

      // Documented, but still served by the provider itself.
      const discovery = await server.fetch('/.well-known/openid-configuration');
      expect(((await discovery.json()) as { issuer: string }).issuer).toBe(server.url);
    });
  });
});
