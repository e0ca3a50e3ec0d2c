import { ConfigError, type Env, envReader } from '@idt/core';

/** The scopes a BFF asks for when `OIDC_SCOPES` is not set. */
export const DEFAULT_BFF_SCOPES: readonly string[] = Object.freeze(['openid', 'profile', 'email', 'offline_access']);

/** The session lifetime when `BFF_SESSION_TTL_SECONDS` is not set: 24 hours (SPEC 5.4). */
export const DEFAULT_BFF_SESSION_TTL_SECONDS = 86_400;

/** The session cookie's name when `COOKIE_NAME` is not set and cookies are `Secure`. */
export const DEFAULT_BFF_COOKIE_NAME = '__Host-idt_bff';

/** The session cookie's name when `COOKIE_SECURE=false` (plain http off loopback, or Safari: no `__Host-` prefix). */
export const DEFAULT_BFF_INSECURE_COOKIE_NAME = 'idt_bff';

/** The least length of a cookie secret (SPEC 5.4 and 8.2). */
export const MIN_COOKIE_SECRET_LENGTH = 32;

/** The key id a single `COOKIE_PASSWORD` seals under. */
export const DEFAULT_COOKIE_KEY_ID = 'default';

/** The path the BFF serves the authorization callback on; `OIDC_REDIRECT_URI` must end there. */
export const BFF_CALLBACK_PATH = '/bff/callback';

/**
 * The cookie secrets: {@link currentKeyId} seals, every entry of
 * {@link secrets} unseals (SPEC 5.4).
 */
export interface CookieKeyring {
  /** The key id new cookies (and tokens at rest) are sealed under: the first of `COOKIE_PASSWORDS`, or `default`. */
  readonly currentKeyId: string;
  /** Key id to secret, in the order given. */
  readonly secrets: ReadonlyMap<string, string>;
}

/** The resolved, validated configuration of a BFF. */
export interface BffConfig {
  /** `OIDC_ISSUER`: must equal the issuer the provider advertises, path prefix included (SPEC 5.4). */
  readonly issuer: string;
  /**
   * `OIDC_METADATA_URL`: where the BFF reads the discovery document when it
   * reaches the provider by another address than the public issuer (split
   * horizon, e.g. `http://idt:8080/.well-known/openid-configuration` inside a
   * container network). Server-to-server calls (token, JWKS, revocation) then
   * go to this URL's origin; the browser is still sent to the public
   * authorization and end-session endpoints.
   */
  readonly metadataUrl: string | undefined;
  /** `OIDC_CLIENT_ID`. */
  readonly clientId: string;
  /** `OIDC_CLIENT_SECRET`. */
  readonly clientSecret: string;
  /** `OIDC_REDIRECT_URI`: the public URL of `/bff/callback`, registered with the client. */
  readonly redirectUri: string;
  /** `OIDC_POST_LOGOUT_REDIRECT_URI`: where the provider sends the browser after logout (registered with the client). */
  readonly postLogoutRedirectUri: string | undefined;
  /** `OIDC_SCOPES` (space-separated); `openid profile email offline_access` by default. */
  readonly scopes: readonly string[];
  /** `BFF_API_BASE_URL`: the idt API that `/api/*` is proxied to. */
  readonly apiBaseUrl: string;
  /** `BFF_SESSION_TTL_SECONDS`: the absolute session lifetime (86,400 by default). */
  readonly sessionTtlSeconds: number;
  readonly cookie: {
    /** `COOKIE_NAME`; `__Host-idt_bff` by default (`idt_bff` when not secure). The login-transaction cookie is this name plus `_tx`. */
    readonly name: string;
    /**
     * `COOKIE_SECURE` (default `true`, also on `http://localhost` and
     * `http://127.0.0.1`, where Chrome, Edge and Firefox keep `Secure`
     * cookies): `false` only for plain http on another host name, or Safari.
     */
    readonly secure: boolean;
    /** `COOKIE_PASSWORD` or `COOKIE_PASSWORDS`. */
    readonly keyring: CookieKeyring;
  };
}

/**
 * The BFF's settings as an object (the same rules as the environment
 * variables; see {@link bffConfigFromEnv}). Give either `cookiePassword` or
 * `cookiePasswords`.
 *
 * @example
 * const config = resolveBffConfig({
 *   issuer: 'https://id.example.com',
 *   clientId: 'acme-dashboard',
 *   clientSecret: process.env.OIDC_CLIENT_SECRET,
 *   redirectUri: 'https://app.example.com/bff/callback',
 *   postLogoutRedirectUri: 'https://app.example.com/',
 *   apiBaseUrl: 'https://id.example.com',
 *   cookiePassword: process.env.COOKIE_PASSWORD,
 * });
 */
export interface BffOptions {
  readonly issuer?: string | undefined;
  readonly metadataUrl?: string | undefined;
  readonly clientId?: string | undefined;
  readonly clientSecret?: string | undefined;
  readonly redirectUri?: string | undefined;
  readonly postLogoutRedirectUri?: string | undefined;
  /** Scopes as an array or a space-separated string. */
  readonly scopes?: readonly string[] | string | undefined;
  readonly apiBaseUrl?: string | undefined;
  readonly sessionTtlSeconds?: number | undefined;
  readonly cookieName?: string | undefined;
  readonly cookieSecure?: boolean | undefined;
  /** One secret of at least 32 characters (sealed under the key id `default`). */
  readonly cookiePassword?: string | undefined;
  /**
   * Key id to secret, for rotation: the first entry seals, every entry
   * unseals. Ids are letters, digits and underscores and not all digits (a
   * JSON object lists integer-like keys first, which would change which key
   * seals). When rotating away from a single `cookiePassword` for the first
   * time, key the outgoing secret `default`: that is the id cookies sealed
   * under it carry.
   */
  readonly cookiePasswords?: Readonly<Record<string, string>> | undefined;
}

type Field = keyof BffOptions;

/** The environment variable behind each option, as problems name them. */
const ENV_NAMES: Record<Field, string> = {
  issuer: 'OIDC_ISSUER',
  metadataUrl: 'OIDC_METADATA_URL',
  clientId: 'OIDC_CLIENT_ID',
  clientSecret: 'OIDC_CLIENT_SECRET',
  redirectUri: 'OIDC_REDIRECT_URI',
  postLogoutRedirectUri: 'OIDC_POST_LOGOUT_REDIRECT_URI',
  scopes: 'OIDC_SCOPES',
  apiBaseUrl: 'BFF_API_BASE_URL',
  sessionTtlSeconds: 'BFF_SESSION_TTL_SECONDS',
  cookieName: 'COOKIE_NAME',
  cookieSecure: 'COOKIE_SECURE',
  cookiePassword: 'COOKIE_PASSWORD',
  cookiePasswords: 'COOKIE_PASSWORDS',
};

const OPTION_NAMES = Object.fromEntries(Object.keys(ENV_NAMES).map((key) => [key, key])) as Record<Field, string>;

const MAX_SESSION_TTL_SECONDS = 31_536_000;
const MIN_SESSION_TTL_SECONDS = 60;
const KEY_ID = /^\w+$/;
const ALL_DIGITS = /^\d+$/;
/** RFC 6265 cookie-name token characters. */
const COOKIE_NAME = /^[!#$%&'*+\-.^`|~\w]+$/;

/**
 * Reads the BFF configuration from environment variables (SPEC 2.1 and 5.4)
 * and reports every problem at once.
 *
 * | Variable | |
 * |---|---|
 * | `OIDC_ISSUER` | required; exactly the issuer the provider advertises |
 * | `OIDC_CLIENT_ID`, `OIDC_CLIENT_SECRET` | required; a confidential application client |
 * | `OIDC_REDIRECT_URI` | required; the public URL of `/bff/callback` |
 * | `OIDC_POST_LOGOUT_REDIRECT_URI` | optional; where the provider returns after logout |
 * | `OIDC_SCOPES` | space-separated; default `openid profile email offline_access` |
 * | `OIDC_METADATA_URL` | optional; discovery document address for split-horizon networks |
 * | `BFF_API_BASE_URL` | required; the API `/api/*` is proxied to |
 * | `COOKIE_PASSWORD` | a secret of at least 32 characters, or: |
 * | `COOKIE_PASSWORDS` | JSON `{"keyId": "secret", ...}`; the first seals, all unseal; ids `^\w+$`, not all digits; the outgoing secret of a first rotation is keyed `default` |
 * | `BFF_SESSION_TTL_SECONDS` | default 86400 |
 * | `COOKIE_NAME` | default `__Host-idt_bff` (`idt_bff` when not secure) |
 * | `COOKIE_SECURE` | default `true` (fine on `http://localhost`); `false` only for plain http on another host, or Safari |
 *
 * @throws ConfigError listing each invalid or missing variable and how to fix it.
 *
 * @example
 * const config = bffConfigFromEnv(process.env);
 */
export function bffConfigFromEnv(env: Env): BffConfig {
  const read = envReader(env);
  const options: Record<string, unknown> = {
    issuer: read.string('OIDC_ISSUER'),
    metadataUrl: read.string('OIDC_METADATA_URL'),
    clientId: read.string('OIDC_CLIENT_ID'),
    clientSecret: read.string('OIDC_CLIENT_SECRET'),
    redirectUri: read.string('OIDC_REDIRECT_URI'),
    postLogoutRedirectUri: read.string('OIDC_POST_LOGOUT_REDIRECT_URI'),
    scopes: read.string('OIDC_SCOPES'),
    apiBaseUrl: read.string('BFF_API_BASE_URL'),
    sessionTtlSeconds: read.integer('BFF_SESSION_TTL_SECONDS', {
      default: DEFAULT_BFF_SESSION_TTL_SECONDS,
      min: MIN_SESSION_TTL_SECONDS,
      max: MAX_SESSION_TTL_SECONDS,
    }),
    cookieName: read.string('COOKIE_NAME'),
    cookieSecure: read.boolean('COOKIE_SECURE', true),
    // Not trimmed: a secret is taken as written (only a blank value counts as unset).
    cookiePassword: env.COOKIE_PASSWORD?.trim() ? env.COOKIE_PASSWORD : undefined,
  };
  const passwordsJson = read.string('COOKIE_PASSWORDS');
  if (passwordsJson !== undefined) {
    try {
      const parsed: unknown = JSON.parse(passwordsJson);
      options.cookiePasswords = isPlainObject(parsed) ? parsed : invalidMap;
    } catch {
      options.cookiePasswords = notJson;
    }
  }
  const problems: string[] = [];
  const config = validate(options, ENV_NAMES, problems);
  for (const problem of problems) read.problem(problem);
  read.done();
  return config as BffConfig;
}

/**
 * Validates settings given as an object ({@link BffOptions}) with the same
 * rules as {@link bffConfigFromEnv}; problems name the option.
 *
 * @throws ConfigError listing every problem.
 */
export function resolveBffConfig(options: BffOptions): BffConfig {
  const problems: string[] = [];
  const config = validate(options as Record<string, unknown>, OPTION_NAMES, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return config as BffConfig;
}

/** Whether a value is a resolved {@link BffConfig} rather than {@link BffOptions}. */
export function isBffConfig(value: BffConfig | BffOptions): value is BffConfig {
  return typeof (value as BffConfig).cookie === 'object' && (value as BffConfig).cookie !== null;
}

const notJson = Symbol('not JSON');
const invalidMap = Symbol('not an object');

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isLoopback(url: URL): boolean {
  return url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]';
}

function validate(input: Record<string, unknown>, names: Record<Field, string>, problems: string[]): BffConfig | undefined {
  const problem = (field: Field, message: string) => problems.push(`${names[field]}: ${message}`);
  const text = (field: Field): string | undefined => {
    const value = input[field];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') {
      problem(field, 'must be a string');
      return undefined;
    }
    return value.trim() === '' ? undefined : value.trim();
  };
  const required = (field: Field, what: string): string | undefined => {
    const value = text(field);
    if (value === undefined) problem(field, `is required: set it to ${what}`);
    return value;
  };

  const secure = input.cookieSecure === undefined ? true : input.cookieSecure;
  if (typeof secure !== 'boolean') problem('cookieSecure', 'must be true or false');
  const isSecure = secure !== false;

  /** An absolute http(s) URL without fragment; https unless loopback or local development (`allowHttp`). */
  const url = (field: Field, value: string | undefined, options: { allowHttp: boolean; noQuery?: boolean }) => {
    if (value === undefined) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      problem(field, `"${value}" is not an absolute URL: give the full address, e.g. https://example.com`);
      return undefined;
    }
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
      problem(field, `must be an http(s) URL, not ${parsed.protocol}`);
      return undefined;
    }
    if (parsed.protocol === 'http:' && !options.allowHttp && !isLoopback(parsed) && isSecure) {
      problem(field, 'must use https (http is accepted only for localhost and 127.0.0.1, or with COOKIE_SECURE=false)');
    }
    if (parsed.hash || value.includes('#')) problem(field, 'must not carry a fragment (#...)');
    if (parsed.username || parsed.password) problem(field, 'must not carry credentials');
    if (options.noQuery && parsed.search) problem(field, 'must not carry a query string');
    return value;
  };

  const issuer = url('issuer', required('issuer', 'the issuer URL the identity server advertises'), {
    allowHttp: false,
    noQuery: true,
  });
  const metadataUrl = url('metadataUrl', text('metadataUrl'), { allowHttp: true, noQuery: true });
  const clientId = required('clientId', 'the client id of the registered application');
  const clientSecret = required('clientSecret', 'the client secret shown once at registration');
  const redirectUri = url('redirectUri', required('redirectUri', `the public URL of ${BFF_CALLBACK_PATH} on this host`), {
    allowHttp: false,
  });
  if (redirectUri !== undefined && URL.canParse(redirectUri) && new URL(redirectUri).pathname !== BFF_CALLBACK_PATH) {
    problem(
      'redirectUri',
      `must point at ${BFF_CALLBACK_PATH} (the route that completes the sign-in), e.g. https://app.example.com${BFF_CALLBACK_PATH}`,
    );
  }
  const postLogoutRedirectUri = url('postLogoutRedirectUri', text('postLogoutRedirectUri'), { allowHttp: false });
  const apiBaseUrl = url('apiBaseUrl', required('apiBaseUrl', 'the base URL of the idt API'), {
    allowHttp: true,
    noQuery: true,
  });

  let scopes: string[] = [...DEFAULT_BFF_SCOPES];
  const rawScopes = input.scopes;
  if (typeof rawScopes === 'string' && rawScopes.trim() !== '') scopes = rawScopes.trim().split(/\s+/);
  else if (Array.isArray(rawScopes) && rawScopes.length > 0) scopes = rawScopes.map(String);
  else if (rawScopes !== undefined && rawScopes !== null && typeof rawScopes !== 'string' && !Array.isArray(rawScopes)) {
    problem('scopes', 'must be a space-separated list of scopes');
  }
  scopes = [...new Set(scopes)];
  if (!scopes.includes('openid')) problem('scopes', 'must include openid (the BFF signs users in with OpenID Connect)');

  let sessionTtlSeconds = DEFAULT_BFF_SESSION_TTL_SECONDS;
  const ttl = input.sessionTtlSeconds;
  if (ttl !== undefined) {
    if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < MIN_SESSION_TTL_SECONDS || ttl > MAX_SESSION_TTL_SECONDS) {
      problem(
        'sessionTtlSeconds',
        `must be a whole number of seconds between ${MIN_SESSION_TTL_SECONDS} and ${MAX_SESSION_TTL_SECONDS}`,
      );
    } else {
      sessionTtlSeconds = ttl;
    }
  }

  let cookieName = isSecure ? DEFAULT_BFF_COOKIE_NAME : DEFAULT_BFF_INSECURE_COOKIE_NAME;
  const givenName = text('cookieName');
  if (givenName !== undefined) {
    if (!COOKIE_NAME.test(givenName)) {
      problem('cookieName', "may hold only letters, digits and !#$%&'*+-.^_`|~");
    } else if (!isSecure && (givenName.startsWith('__Host-') || givenName.startsWith('__Secure-'))) {
      problem(
        'cookieName',
        `"${givenName}" needs Secure cookies: drop the __Host-/__Secure- prefix or leave ${names.cookieSecure} true`,
      );
    } else {
      cookieName = givenName;
    }
  }

  const keyring = cookieKeyring(input, names, problem);

  if (problems.length > 0) return undefined;
  return {
    issuer: issuer as string,
    metadataUrl,
    clientId: clientId as string,
    clientSecret: clientSecret as string,
    redirectUri: redirectUri as string,
    postLogoutRedirectUri,
    scopes,
    apiBaseUrl: apiBaseUrl as string,
    sessionTtlSeconds,
    cookie: { name: cookieName, secure: isSecure, keyring: keyring as CookieKeyring },
  };
}

function cookieKeyring(
  input: Record<string, unknown>,
  names: Record<Field, string>,
  problem: (field: Field, message: string) => void,
): CookieKeyring | undefined {
  const single = input.cookiePassword;
  const map = input.cookiePasswords;
  const hasSingle = single !== undefined && single !== null && single !== '';
  const hasMap = map !== undefined && map !== null;
  const short = `must be at least ${MIN_COOKIE_SECRET_LENGTH} characters: generate one with \`openssl rand -base64 32\``;
  if (hasSingle && hasMap) {
    problem('cookiePassword', `set either ${names.cookiePassword} or ${names.cookiePasswords}, not both`);
    return undefined;
  }
  if (!hasSingle && !hasMap) {
    problem(
      'cookiePassword',
      `is required: set ${names.cookiePassword} to a secret of at least ${MIN_COOKIE_SECRET_LENGTH} characters (or ${names.cookiePasswords} for rotation)`,
    );
    return undefined;
  }
  if (hasSingle) {
    if (typeof single !== 'string' || single.length < MIN_COOKIE_SECRET_LENGTH) {
      problem('cookiePassword', short);
      return undefined;
    }
    return { currentKeyId: DEFAULT_COOKIE_KEY_ID, secrets: new Map([[DEFAULT_COOKIE_KEY_ID, single]]) };
  }
  if (map === notJson) {
    problem('cookiePasswords', 'is not valid JSON: write an object such as {"k2":"<new secret>","default":"<old secret>"}');
    return undefined;
  }
  if (!isPlainObject(map)) {
    problem(
      'cookiePasswords',
      'must be a JSON object of key id to secret, such as {"k2":"<new secret>","default":"<old secret>"}',
    );
    return undefined;
  }
  const entries = Object.entries(map);
  if (entries.length === 0) {
    problem('cookiePasswords', 'must hold at least one key id and secret');
    return undefined;
  }
  let valid = true;
  for (const [id, secret] of entries) {
    if (!KEY_ID.test(id)) {
      problem('cookiePasswords', `key id "${id}" may hold only letters, digits and underscores`);
      valid = false;
    } else if (ALL_DIGITS.test(id)) {
      problem(
        'cookiePasswords',
        `key id "${id}" is all digits: add a letter (e.g. "k${id}"), since JSON lists such keys first and the wrong key would seal`,
      );
      valid = false;
    }
    if (typeof secret !== 'string' || secret.length < MIN_COOKIE_SECRET_LENGTH) {
      problem('cookiePasswords', `the secret of "${id}" ${short}`);
      valid = false;
    }
  }
  if (!valid) return undefined;
  const [first] = entries;
  return { currentKeyId: (first as [string, string])[0], secrets: new Map(entries as Array<[string, string]>) };
}
