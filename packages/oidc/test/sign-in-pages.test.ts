import { join } from 'node:path';
import { readMailbox } from '@idt/core/mail';
import {
  Browser,
  bootstrapAdmin,
  createTestIdt,
  discover,
  oidcClient,
  redeemCode,
  registerClient,
  signIn,
  type TestAdmin,
  type TestClient,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REDIRECT = 'http://127.0.0.1:9/callback';

const isString = (value: unknown): value is string => typeof value === 'string';

/** Passwordless mail is sent in the background: wait for a new message containing `marker`. */
async function latestMail(server: TestIdt, to: string, marker: string) {
  const seen = new Set<string>();
  for (let attempt = 0; attempt < 100; attempt++) {
    const messages = await readMailbox(join(server.database.dataDir, 'mail'), { to }).catch(() => []);
    const match = messages.filter((message) => message.text.includes(marker) || message.subject.toLowerCase().includes(marker));
    const latest = match.at(-1);
    if (latest && !seen.has(latest.file) && Date.now() - new Date(latest.headers.date ?? 0).getTime() < 60_000) return latest;
    // Real I/O: the next look at the mailbox directory, which a background send writes to.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no ${marker} mail for ${to}`);
}

describe.each(testDialects())('sign-in pages on %s', (dialect) => {
  let server: TestIdt;
  let admin: TestAdmin;
  let client: TestClient;
  let config: oidcClient.Configuration;
  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    admin = await bootstrapAdmin(server);
    const registration = await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      null,
      { kind: 'application', name: 'Console', redirectUris: [REDIRECT], scopes: ['openid', 'email'] },
      { firstParty: true },
    );
    client = { clientId: registration.client.clientId, clientSecret: registration.clientSecret, record: {} };
    config = await discover(server, client);
  });
  afterAll(async () => {
    await server?.close();
  });

  async function openSignIn(browser = new Browser({}, server.send), configuration = config) {
    const verifier = oidcClient.randomPKCECodeVerifier();
    const url = oidcClient.buildAuthorizationUrl(configuration, {
      redirect_uri: REDIRECT,
      scope: 'openid email',
      code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: 'state-1',
    });
    const page = await browser.navigate(url.href);
    return { browser, page, verifier };
  }

  /** A browser that notes the method and path of every request, and counts the sign-in interactions it went through. */
  function recordingBrowser() {
    const requests: string[] = [];
    const browser = new Browser({}, (input, init) => {
      requests.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
      return server.send(input, init);
    });
    const interactions = () => [
      ...new Set(requests.map((request) => /\/connect\/interaction\/([^/]+)/.exec(request)?.[1]).filter(isString)),
    ];
    return { browser, requests, interactions };
  }

  /** The claims of an access token (a JWT for the API). */
  function accessClaims(tokens: { access_token: string }): Record<string, unknown> {
    return JSON.parse(Buffer.from(tokens.access_token.split('.')[1] ?? '', 'base64url').toString());
  }

  async function exchange(callback: URL, verifier: string) {
    return oidcClient.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: 'state-1' });
  }

  it('serves an accessible sign-in form without inline scripts', async () => {
    const { page } = await openSignIn();
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.body).toContain('<html lang="en">');
    expect(page.body).toMatch(/<label for="email">/);
    expect(page.body).toMatch(/<input id="email" name="email" type="email" autocomplete="username webauthn"/); // D: passkey autofill
    expect(page.body).toMatch(/<label for="password">/);
    expect(page.body).toMatch(/name="csrf" value="[^"]+"/);
    expect(page.body).not.toMatch(/<script>[^<]/);
    expect(page.body).not.toMatch(/\son[a-z]+="/);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('cache-control')).toBe('no-store');
    const css = await server.send(`${server.url}/connect/assets/idt.css`);
    expect(css.headers.get('content-type')).toMatch(/text\/css/);
  });

  it('answers a wrong password with a generic message and a forged form with 403', async () => {
    const { browser } = await openSignIn();
    const wrong = await browser.submit({ form: '/login', fields: { email: admin.email, password: 'not the password' } });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toContain('The e-mail address or password is incorrect.');
    expect(wrong.body).toContain('role="alert"');
    const unknown = await browser.submit({ form: '/login', fields: { email: 'nobody@example.com', password: 'whatever it is' } });
    expect(unknown.body).toContain('The e-mail address or password is incorrect.');
    const forged = await browser.submit({
      form: '/login',
      fields: { email: admin.email, password: admin.password, csrf: 'forged' },
    });
    expect(forged.status).toBe(403);
  });

  it('signs in with the password and creates a session with the session cookie', async () => {
    const { browser, verifier } = await openSignIn();
    const done = await browser.submit({ form: '/login', fields: { email: admin.email, password: admin.password } });
    expect(done.status).toBeGreaterThanOrEqual(300);
    const callback = new URL(done.url);
    expect(callback.searchParams.get('code')).toBeTruthy();
    const tokens = await exchange(callback, verifier);
    const sid = tokens.claims()?.sid as string;
    const cookie = browser.cookies(server.url).get('idt_session');
    expect(cookie).toBeTruthy();
    // The same cookie attributes as the API's sign-ins, Secure included even on an http issuer.
    expect(browser.setCookies.find((value) => value.startsWith('idt_session='))).toMatch(
      /^idt_session=[A-Za-z0-9_-]{43}; HttpOnly; Secure; SameSite=Lax; Path=\/; Max-Age=\d+$/,
    );
    const sessions = await server.fetch('/v1/identity/sessions', { headers: { cookie: `idt_session=${cookie}` } });
    expect(sessions.status).toBe(200);
    const list = (await sessions.json()) as Array<{ id: string }>;
    expect(list.map((session) => session.id)).toContain(sid);
    // Single sign-on: a second authorization in the same browser needs no password.
    const again = await openSignIn(browser);
    expect(again.page.status).toBeGreaterThanOrEqual(300);
    expect(new URL(again.page.url).searchParams.get('code')).toBeTruthy();
  });

  it("keeps single sign-on only while the provider session cookie's signature holds", async () => {
    const { browser } = await openSignIn();
    await browser.submit({ form: '/login', fields: { email: admin.email, password: admin.password } });
    const jar = browser.cookies(server.url);
    const signature = jar.get('idt_sso.sig');
    // Signed as keygrip signs: HMAC-SHA1 of the cookie, base64url without padding; HttpOnly like the cookie.
    expect(signature).toMatch(/^[A-Za-z0-9_-]{27}$/);
    expect(browser.setCookies.find((value) => value.startsWith('idt_sso.sig='))).toMatch(/; httponly/i);
    expect((await openSignIn(browser)).page.status).toBeGreaterThanOrEqual(300);
    // One character of the signature changed: no session, the password is asked again.
    jar.set('idt_sso.sig', `${signature?.slice(0, -1)}${signature?.endsWith('A') ? 'B' : 'A'}`);
    const tampered = await openSignIn(browser);
    expect(tampered.page.status).toBe(200);
    expect(tampered.page.body).toContain('/login"');
  });

  it('goes from the password straight to the code for a first-party client: one interaction, no consent round', async () => {
    const recording = recordingBrowser();
    const { browser, verifier } = await openSignIn(recording.browser);
    const done = await browser.submit({ form: '/login', fields: { email: admin.email, password: admin.password } });
    const callback = new URL(done.url);
    expect(callback.searchParams.get('code')).toBeTruthy();
    const [uid, ...others] = recording.interactions();
    expect(others).toEqual([]);
    expect(recording.requests.slice(-2)).toEqual([`POST /connect/interaction/${uid}/login`, `GET /connect/authorize/${uid}`]);
    // The grant made with the login works as the consent round's did: the user's single organization, the scopes asked.
    const tokens = await exchange(callback, verifier);
    const claims = accessClaims(tokens);
    expect(claims.org_id).toBe(admin.organizationId);
    expect(String(claims.scope).split(' ').sort()).toEqual(['email', 'openid']);
    expect(tokens.claims()?.email).toBe(admin.email);
  });

  it("asks a third-party client's consent once, then goes from the password straight to the code", async () => {
    const registration = await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      admin.organizationId,
      { kind: 'application', name: 'Partner app', redirectUris: [REDIRECT], scopes: ['openid', 'email'] },
    );
    const partner = { clientId: registration.client.clientId, clientSecret: registration.clientSecret, record: {} };
    const partnerConfig = await discover(server, partner);
    const signInWith = async () => {
      const recording = recordingBrowser();
      const { browser, verifier } = await openSignIn(recording.browser, partnerConfig);
      const page = await browser.submit({ form: '/login', fields: { email: admin.email, password: admin.password } });
      return { browser, page, verifier, interactions: recording.interactions };
    };

    // The first time, the consent page follows the password, in an interaction of its own.
    const first = await signInWith();
    expect(first.page.status).toBe(200);
    expect(first.page.body).toContain('Allow Partner app?');
    const approved = await first.browser.submit({ form: '/consent', fields: { decision: 'approve' } });
    expect(new URL(approved.url).searchParams.get('code')).toBeTruthy();
    expect(first.interactions()).toHaveLength(2);

    // With that consent remembered, a sign-in in another browser needs no second interaction.
    const second = await signInWith();
    const callback = new URL(second.page.url);
    expect(callback.searchParams.get('code')).toBeTruthy();
    expect(second.interactions()).toHaveLength(1);
    const tokens = await oidcClient.authorizationCodeGrant(partnerConfig, callback, {
      pkceCodeVerifier: second.verifier,
      expectedState: 'state-1',
    });
    expect(accessClaims(tokens)).toMatchObject({ org_id: admin.organizationId, azp: partner.clientId });
  });

  it('signs in with a one-time code from the e-mail', async () => {
    const { browser, verifier } = await openSignIn();
    const codePage = await browser.submit({ form: '/passwordless', fields: { email: admin.email, method: 'code' } });
    expect(codePage.status).toBe(200);
    expect(codePage.body).toContain('autocomplete="one-time-code"');
    const mail = await latestMail(server, admin.email, 'code');
    const code = /\b(\d{6})\b/.exec(mail?.text ?? '')?.[1] ?? '';
    expect(code).toMatch(/^\d{6}$/);
    const wrong = await browser.submit({ form: '/code', fields: { code: code === '000000' ? '111111' : '000000' } });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toContain('The code is wrong or has expired.');
    const done = await browser.submit({ form: '/code', fields: { code } });
    const tokens = await exchange(new URL(done.url), verifier);
    expect(tokens.claims()?.sub).toBe(admin.userId);
  });

  it('signs in with a magic link opened in the same browser', async () => {
    const recording = recordingBrowser();
    const { browser, verifier } = await openSignIn(recording.browser);
    const sent = await browser.submit({ form: '/passwordless', fields: { email: admin.email, method: 'link' } });
    expect(sent.body).toContain('Check your e-mail');
    const mail = await latestMail(server, admin.email, 'sign-in link');
    const link = /(https?:\/\/\S+\/link\?token=\S+)/.exec(mail?.text ?? '')?.[1] ?? '';
    // The link opens this sign-in's own page (its later steps run before a session starts).
    expect(link).toContain('/connect/interaction/');
    // The link opens a confirmation page (nothing consumed yet); its button signs in.
    const confirm = await browser.navigate(link, new URL(server.url).origin);
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('<button type="submit">Sign in</button>');
    const done = await browser.submit({ form: '/link' });
    expect(done.status).toBeGreaterThanOrEqual(300);
    // Back from the link, the grant is made with the login, as after a password: one interaction.
    expect(recording.interactions()).toHaveLength(1);
    const tokens = await exchange(new URL(done.url), verifier);
    expect(tokens.claims()?.sub).toBe(admin.userId);
  });

  it('locks an address out after ten failed passwords in fifteen minutes', async () => {
    const email = `locked-${dialect}@example.com`;
    await server.fetch('/v1/identity/auth/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'correct horse battery staple', firstName: 'L', lastName: 'O' }),
    });
    const { browser } = await openSignIn();
    for (let attempt = 0; attempt < 10; attempt++) {
      const wrong = await browser.submit({ form: '/login', fields: { email, password: 'wrong password here' } });
      expect(wrong.status).toBe(400);
    }
    const blocked = await browser.submit({ form: '/login', fields: { email, password: 'correct horse battery staple' } });
    expect(blocked.status).toBe(429);
    expect(blocked.body).toContain('Too many failed attempts');
  });

  it('shows an expired page for an unknown interaction and cancels back to the client', async () => {
    const expired = await new Browser({}, server.send).navigate(`${server.url}/connect/interaction/unknown-uid`);
    expect(expired.status).toBe(400);
    expect(expired.body).toContain('This sign-in has expired');
    const { browser } = await openSignIn();
    const cancelled = await browser.navigate(
      new URL(/href="([^"]+\/abort)"/.exec(browser.last?.body ?? '')?.[1] ?? '', server.url).href,
    );
    const callback = new URL(cancelled.url);
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe('state-1');
  });
});

describe('sign-in pages show the client branding', () => {
  let server: TestIdt;
  beforeAll(async () => {
    server = await createTestIdt();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('renders the display name, tagline, logo and theme stylesheet', async () => {
    const admin = await bootstrapAdmin(server);
    const token = await admin.token();
    const app = await registerClient(server, token, admin.organizationId, {
      kind: 'application',
      name: 'Branded',
      redirectUris: [REDIRECT],
      scopes: ['openid'],
    });
    const png = Buffer.from(
      '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da6360f8cf00000301010018dd8db40000000049454e44ae426082',
      'hex',
    );
    const put = await server.fetch(`/v1/identity/organizations/${admin.organizationId}/clients/${app.clientId}/branding`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        displayName: 'Acme <Portal>',
        tagline: 'Everything in one place',
        themeJson: {
          light: { primary: '#123456', primaryForeground: '#ffffff' },
          dark: { primary: '#abcdef', primaryForeground: '#000000' },
        },
        logo: png.toString('base64'),
      }),
    });
    expect(put.status).toBe(200);
    const config = await discover(server, app);
    const url = oidcClient.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      code_challenge: await oidcClient.calculatePKCECodeChallenge(oidcClient.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
      state: 's',
    });
    const browser = new Browser({}, server.send);
    const page = await browser.navigate(url.href);
    expect(page.body).toContain('Acme &lt;Portal&gt;');
    expect(page.body).toContain('Everything in one place');
    expect(page.body).toContain('src="data:image/png;base64,');
    const theme = /href="([^"]*theme[^"]*\.css[^"]*)"/.exec(page.body)?.[1] ?? '';
    expect(theme, page.body).toMatch(/theme/);
    const css = (await browser.request(new URL(theme.replace(/&amp;/g, '&'), server.url).href)).body;
    expect(css).toContain('--primary:#123456');
    expect(css).toContain('--primary:#abcdef');
  });
});

describe.each([
  ['behind a trusted proxy', 'true', '203.0.113.5'],
  ['without a trusted proxy', 'false', '127.0.0.1'],
] as const)('a sign-in session %s', (_label, trustProxy, recorded) => {
  let server: TestIdt;
  beforeAll(async () => {
    server = await createTestIdt({ env: { IDT_TRUST_PROXY: trustProxy } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it(`records the client IP ${recorded}`, async () => {
    const admin = await bootstrapAdmin(server);
    const registration = await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      null,
      { kind: 'application', name: 'Proxied', redirectUris: [REDIRECT], scopes: ['openid'] },
      { firstParty: true },
    );
    const config = await discover(server, {
      clientId: registration.client.clientId,
      clientSecret: registration.clientSecret,
      record: {},
    });
    const result = await signIn(config, {
      redirectUri: REDIRECT,
      scope: 'openid',
      email: admin.email,
      password: admin.password,
      browser: new Browser({ 'x-forwarded-for': '203.0.113.5, 10.0.0.1' }, server.send),
    });
    const sid = (await redeemCode(config, result)).claims()?.sid as string;
    const session = await server.database.db('identity_sessions').where({ id: sid }).first();
    expect(session.ip_address).toBe(recorded);
  });
});
