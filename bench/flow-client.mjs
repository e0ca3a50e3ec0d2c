/**
 * A small relying party and browser for the benchmark, over node:http with
 * keep-alive: the authorization-code flow with PKCE through idt's real
 * sign-in pages (authorize → sign-in form → consent or organization choice
 * when asked → code exchange), single sign-on through a second idt (the
 * address on the identifier-first page → the page that moves on to the
 * upstream → the upstream's own sign-in → the downstream's callback → the
 * interaction), and the refresh_token grant. Used by
 * bench/run.mjs to obtain user tokens and seed refresh-token chains, and by
 * bench/load-flow.mjs under load.
 *
 * Every unexpected answer throws a {@link FlowError} carrying the status and
 * the start of the body.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';

/** An unexpected answer (or a transport error) during a flow. */
export class FlowError extends Error {
  constructor(message, { status, body, step } = {}) {
    super(message);
    this.name = 'FlowError';
    this.status = status;
    this.body = body;
    this.step = step;
  }
}

/** A keep-alive agent for `sockets` concurrent requests. */
export function createAgent(sockets = 8) {
  return new http.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
}

/** One HTTP request; resolves with `{ status, headers, body }` whatever the status. */
export function send(url, { method = 'GET', headers = {}, body, agent, timeoutMs = 30_000 } = {}) {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        hostname: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method,
        headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
        agent,
        timeout: timeoutMs,
      },
      (response) => {
        const chunks = [];
        response.on('data', (chunk) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`${method} ${target.pathname} timed out after ${timeoutMs} ms`)));
    request.on('error', reject);
    if (body !== undefined) request.write(body);
    request.end();
  });
}

export function basicAuth(clientId, clientSecret) {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
}

const excerpt = (body) => String(body ?? '').slice(0, 500);

function decodeEntities(value) {
  return value
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** The forms of an HTML page with their hidden and pre-filled fields. */
export function parseForms(html, base) {
  const forms = [];
  for (const match of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const attributes = match[1] ?? '';
    const action = decodeEntities(/action="([^"]*)"/i.exec(attributes)?.[1] ?? base);
    const method = (/method="([^"]*)"/i.exec(attributes)?.[1] ?? 'get').toUpperCase();
    const fields = {};
    for (const input of (match[2] ?? '').matchAll(/<input\b([^>]*)>/gi)) {
      const attrs = input[1] ?? '';
      const name = /name="([^"]*)"/i.exec(attrs)?.[1];
      if (!name) continue;
      const type = (/type="([^"]*)"/i.exec(attrs)?.[1] ?? 'text').toLowerCase();
      if ((type === 'radio' || type === 'checkbox') && !/\bchecked\b/i.test(attrs)) continue;
      fields[name] = decodeEntities(/value="([^"]*)"/i.exec(attrs)?.[1] ?? '');
    }
    forms.push({ action: new URL(action, base).href, method, fields });
  }
  return forms;
}

/**
 * A browser's cookie jars, one per origin (paths ignored), that follows
 * redirects by hand. A real browser keys cookies by host, not by port: the
 * upstream and the downstream idt of the single sign-on row share
 * 127.0.0.1 on two ports, and their cookies (the same names) would mix in
 * one jar; deployed, they are two hosts.
 */
class Browser {
  #jars = new Map();
  #agent;
  /** HTTP requests sent. */
  requests = 0;
  /** The origins requests went to. */
  visited = new Set();

  constructor(agent) {
    this.#agent = agent;
  }

  #jar(origin) {
    let jar = this.#jars.get(origin);
    if (!jar) {
      jar = new Map();
      this.#jars.set(origin, jar);
    }
    return jar;
  }

  async request(url, init = {}) {
    const origin = new URL(url).origin;
    const jar = this.#jar(origin);
    const headers = { ...init.headers };
    if (jar.size > 0) headers.cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    this.requests++;
    this.visited.add(origin);
    const response = await send(url, { ...init, headers, agent: this.#agent });
    const cookies = response.headers['set-cookie'] ?? [];
    for (const cookie of cookies) {
      const [pair = '', ...attributes] = cookie.split(';');
      const index = pair.indexOf('=');
      const name = pair.slice(0, index).trim();
      const value = pair.slice(index + 1).trim();
      const expired = attributes.some((attribute) => {
        const [key = '', raw = ''] = attribute.split('=');
        const lower = key.trim().toLowerCase();
        if (lower === 'max-age') return Number(raw) <= 0;
        if (lower === 'expires') return new Date(raw).getTime() <= Date.now();
        return false;
      });
      if (expired || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    return { url, ...response };
  }

  /**
   * Follows redirects while they stay on `origins` (an origin or a set of them); returns the first page or
   * the first redirect elsewhere (`left: true`).
   */
  async navigate(url, origins = new URL(url).origin, init = {}) {
    const allowed = typeof origins === 'string' ? new Set([origins]) : origins;
    let current = url;
    let response = await this.request(current, init);
    for (let hop = 0; hop < 20; hop++) {
      const location = response.headers.location;
      if (response.status < 300 || response.status >= 400 || !location) return response;
      const next = new URL(location, current).href;
      if (!allowed.has(new URL(next).origin)) return { ...response, url: next, left: true };
      current = next;
      response = await this.request(current);
    }
    throw new FlowError(`too many redirects from ${url}`, { step: 'redirects' });
  }

  /**
   * Submits the form whose action contains `action` on `page`, then follows redirects on `origins` (the
   * form's origin by default).
   */
  async submit(page, action, fields = {}, origins) {
    const form = parseForms(page.body, page.url).find((candidate) => candidate.action.includes(action));
    if (!form)
      throw new FlowError(`no ${action} form at ${page.url}`, { status: page.status, body: excerpt(page.body), step: action });
    const origin = new URL(form.action).origin;
    return this.navigate(form.action, origins ?? origin, {
      method: form.method,
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
      body: new URLSearchParams({ ...form.fields, ...fields }).toString(),
    });
  }
}

/** The target of a page's `<meta http-equiv="refresh" content="0;url=…">`, absolute; undefined without one. */
export function metaRefresh(html, base) {
  for (const match of html.matchAll(/<meta\b([^>]*)>/gi)) {
    const attributes = match[1] ?? '';
    if (!/http-equiv="refresh"/i.test(attributes)) continue;
    const content = decodeEntities(/content="([^"]*)"/i.exec(attributes)?.[1] ?? '');
    const url = /^\s*\d+\s*[;,]\s*url\s*=\s*['"]?([^'"]+)['"]?\s*$/i.exec(content)?.[1];
    if (url) return new URL(url, base).href;
  }
  return undefined;
}

const base64url = (bytes) => Buffer.from(bytes).toString('base64url');

/**
 * Signs `email` in through the authorization endpoint and the sign-in pages
 * of `baseUrl`, then redeems the code with its PKCE verifier. Resolves with
 * the token endpoint's answer (`access_token`, `refresh_token`, `id_token`, …),
 * the number of HTTP requests the sign-in took and whether it went through
 * `upstreamOrigin` (`federated`). With `secondFactor` (a function answering
 * the TOTP code), the second-factor page is answered too; without it, that
 * page is an unexpected answer. An identifier-first page (an organization
 * connection exists) takes the address first.
 *
 * With `upstreamOrigin` (single sign-on through another idt), the address
 * must route there: the downstream answers a page that moves on by itself
 * (`meta refresh`), the upstream's own sign-in pages take the same address
 * and password, and its redirect to the downstream's callback brings the
 * browser back to the interaction; a password page on the downstream is an
 * unexpected answer, and so is a sign-in that never reached the upstream.
 */
export async function signIn({
  baseUrl,
  clientId,
  clientSecret,
  redirectUri,
  scope,
  email,
  password,
  agent,
  secondFactor,
  upstreamOrigin,
}) {
  const browser = new Browser(agent);
  const downstreamOrigin = new URL(baseUrl).origin;
  const origins = new Set([downstreamOrigin, ...(upstreamOrigin ? [upstreamOrigin] : [])]);
  const verifier = base64url(randomBytes(32));
  const challenge = base64url(createHash('sha256').update(verifier).digest());
  const state = base64url(randomBytes(16));
  const authorize = new URL(`${baseUrl}/connect/authorize`);
  authorize.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope,
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  let page = await browser.navigate(authorize.href, origins);
  const seen = [];
  // Single sign-on: authorize, the address, the moving-on page, the upstream's sign-in, its consent maybe,
  // back to the interaction, the downstream's consent maybe.
  const maxSteps = upstreamOrigin ? 10 : 6;
  for (let step = 0; !page.left; step++) {
    seen.push(`${page.status} ${new URL(page.url).origin === downstreamOrigin ? '' : 'upstream '}${new URL(page.url).pathname}`);
    if (step >= maxSteps || page.status !== 200) {
      throw new FlowError(`sign-in: unexpected answer ${page.status} at ${page.url} (after ${seen.join(' → ')})`, {
        status: page.status,
        body: excerpt(page.body),
        step: 'authorize',
      });
    }
    const refreshTo = metaRefresh(page.body, page.url);
    // oidc-provider's development interactions (the stock baseline): one form per prompt, posted to the interaction.
    if (/name="prompt" value="login"/.test(page.body))
      page = await browser.submit(page, '/interaction/', { login: email, password }, origins);
    else if (/name="prompt" value="consent"/.test(page.body)) page = await browser.submit(page, '/interaction/', {}, origins);
    else if (/action="[^"]*\/identify"/.test(page.body)) page = await browser.submit(page, '/identify', { email }, origins);
    else if (refreshTo) {
      if (!origins.has(new URL(refreshTo).origin))
        throw new FlowError(`sign-in: the page at ${page.url} moves on to ${refreshTo}, not to the upstream`, {
          status: page.status,
          body: excerpt(page.body),
          step: 'refresh',
        });
      page = await browser.navigate(refreshTo, origins);
    } else if (/action="[^"]*\/login"/.test(page.body)) {
      if (upstreamOrigin && new URL(page.url).origin === downstreamOrigin)
        throw new FlowError(`sign-in: ${email} did not route to the upstream (the password page at ${page.url})`, {
          status: page.status,
          body: excerpt(page.body),
          step: 'identify',
        });
      page = await browser.submit(page, '/login', { email, password }, origins);
    } else if (secondFactor && /action="[^"]*\/second-factor"/.test(page.body))
      page = await browser.submit(page, '/second-factor', { method: 'totp', code: secondFactor() }, origins);
    else if (/action="[^"]*\/consent"/.test(page.body))
      page = await browser.submit(page, '/consent', { decision: 'approve' }, origins);
    else if (/action="[^"]*\/organization"/.test(page.body)) page = await browser.submit(page, '/organization', {}, origins);
    else
      throw new FlowError(`sign-in: no sign-in, consent or organization form at ${page.url} (after ${seen.join(' → ')})`, {
        status: page.status,
        body: excerpt(page.body),
        step: 'page',
      });
  }
  const federated = upstreamOrigin !== undefined && browser.visited.has(upstreamOrigin);
  if (upstreamOrigin && !federated)
    throw new FlowError(`sign-in: ${email} signed in without going through ${upstreamOrigin} (${seen.join(' → ')})`, {
      status: page.status,
      step: 'upstream',
    });
  const callback = new URL(page.url);
  if (`${callback.origin}${callback.pathname}` !== redirectUri) {
    throw new FlowError(`sign-in: redirected to ${callback.href}, not to ${redirectUri}`, {
      status: page.status,
      step: 'callback',
    });
  }
  const code = callback.searchParams.get('code');
  if (!code || callback.searchParams.get('state') !== state) {
    throw new FlowError(`sign-in: the callback carries no code or a wrong state: ${callback.search.slice(0, 300)}`, {
      status: page.status,
      step: 'callback',
    });
  }
  const answer = await send(`${baseUrl}/connect/token`, {
    method: 'POST',
    agent,
    headers: { authorization: basicAuth(clientId, clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    }).toString(),
  });
  if (answer.status !== 200) {
    throw new FlowError(`code exchange answered ${answer.status}`, {
      status: answer.status,
      body: excerpt(answer.body),
      step: 'token',
    });
  }
  return { ...JSON.parse(answer.body), requests: browser.requests + 1, federated };
}

/** One refresh_token grant; resolves with the token endpoint's answer (a new `refresh_token` with rotation). */
export async function refresh({ baseUrl, clientId, clientSecret, refreshToken, agent }) {
  const answer = await send(`${baseUrl}/connect/token`, {
    method: 'POST',
    agent,
    headers: { authorization: basicAuth(clientId, clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(refreshToken)}`,
  });
  if (answer.status !== 200) {
    throw new FlowError(`refresh_token grant answered ${answer.status}`, {
      status: answer.status,
      body: excerpt(answer.body),
      step: 'refresh',
    });
  }
  const tokens = JSON.parse(answer.body);
  if (!tokens.refresh_token || !tokens.access_token)
    throw new FlowError('refresh_token grant answered 200 without a new refresh token and access token', {
      status: 200,
      body: excerpt(answer.body),
      step: 'refresh',
    });
  return tokens;
}
