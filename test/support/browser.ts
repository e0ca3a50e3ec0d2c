/**
 * A small scripted browser for sign-in tests: a cookie jar, manual redirects
 * and HTML form submission, over real HTTP. Cookies are kept per host and
 * honour expiry; paths are ignored (every test host is one server).
 */
export interface BrowserResponse {
  readonly url: string;
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

/** A parsed HTML form. */
export interface HtmlForm {
  readonly action: string;
  readonly method: string;
  readonly fields: Record<string, string>;
}

/** Options of {@link Browser.submit}. */
export interface SubmitOptions {
  /** Which form: the index, or a substring of its action. */
  readonly form?: number | string;
  /** Values to set (over the hidden and pre-filled ones). */
  readonly fields?: Record<string, string>;
  /** Follow redirects until one leaves the server or lands on `stopAt` (default true). */
  readonly follow?: boolean;
}

function decodeEntities(value: string): string {
  return value
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** Extracts the forms of an HTML page with their hidden and pre-filled fields. */
export function parseForms(html: string, base: string): HtmlForm[] {
  const forms: HtmlForm[] = [];
  const formPattern = /<form\b([^>]*)>([\s\S]*?)<\/form>/gi;
  for (const match of html.matchAll(formPattern)) {
    const attributes = match[1] ?? '';
    const inner = match[2] ?? '';
    const action = decodeEntities(/action="([^"]*)"/i.exec(attributes)?.[1] ?? base);
    const method = (/method="([^"]*)"/i.exec(attributes)?.[1] ?? 'get').toUpperCase();
    const fields: Record<string, string> = {};
    for (const input of inner.matchAll(/<input\b([^>]*)>/gi)) {
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

/** A cookie-keeping HTTP client that follows redirects by hand. */
export class Browser {
  readonly #jar = new Map<string, Map<string, string>>();
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;
  /** The last response seen. */
  last: BrowserResponse | undefined;
  /** Every `Set-Cookie` value received, oldest first. */
  readonly setCookies: string[] = [];

  /**
   * @param headers sent with every request (e.g. the `x-forwarded-for` a proxy would add).
   * @param fetcher what sends requests: the global `fetch` over HTTP, or a Fetch handler called in-process.
   */
  constructor(headers: Record<string, string> = {}, fetcher: typeof fetch = fetch) {
    this.#headers = headers;
    this.#fetch = fetcher;
  }

  /** Cookies currently held for a URL's host. */
  cookies(url: string): Map<string, string> {
    const host = new URL(url).host;
    let jar = this.#jar.get(host);
    if (!jar) {
      jar = new Map();
      this.#jar.set(host, jar);
    }
    return jar;
  }

  #store(url: string, headers: Headers) {
    const jar = this.cookies(url);
    for (const cookie of headers.getSetCookie()) {
      this.setCookies.push(cookie);
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
  }

  /** One request, no redirect following. */
  async request(url: string, init: RequestInit = {}): Promise<BrowserResponse> {
    const jar = this.cookies(url);
    const headers = new Headers({ ...this.#headers, ...Object.fromEntries(new Headers(init.headers)) });
    if (jar.size > 0) headers.set('cookie', [...jar].map(([name, value]) => `${name}=${value}`).join('; '));
    const response = await this.#fetch(url, { ...init, headers, redirect: 'manual' });
    this.#store(url, response.headers);
    const result = { url, status: response.status, headers: response.headers, body: await response.text() };
    this.last = result;
    return result;
  }

  /**
   * GETs a URL and follows redirects while they stay on `origin` (default:
   * the URL's own origin); stops at the first redirect elsewhere and returns it.
   */
  async navigate(url: string, origin = new URL(url).origin): Promise<BrowserResponse> {
    let current = url;
    for (let hop = 0; hop < 20; hop++) {
      const response = await this.request(current);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location) return response;
      const next = new URL(location, current).href;
      if (new URL(next).origin !== origin) return { ...response, url: next };
      current = next;
    }
    throw new Error(`Too many redirects from ${url}`);
  }

  /** Submits a form of the last page and follows redirects on the same origin. */
  async submit(options: SubmitOptions = {}): Promise<BrowserResponse> {
    const page = this.last;
    if (!page) throw new Error('No page to submit a form of');
    const forms = parseForms(page.body, page.url);
    const form =
      typeof options.form === 'string'
        ? forms.find((candidate) => candidate.action.includes(options.form as string))
        : forms[options.form ?? 0];
    if (!form) throw new Error(`No such form on ${page.url}:\n${page.body.slice(0, 2000)}`);
    const body = new URLSearchParams({ ...form.fields, ...options.fields });
    const origin = new URL(form.action).origin;
    const response = await this.request(form.action, {
      method: form.method,
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
      body: body.toString(),
    });
    const location = response.headers.get('location');
    if (options.follow === false || response.status < 300 || response.status >= 400 || !location) return response;
    const next = new URL(location, form.action).href;
    if (new URL(next).origin !== origin) return { ...response, url: next };
    return this.navigate(next, origin);
  }
}
