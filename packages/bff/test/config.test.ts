import { bffConfigFromEnv, resolveBffConfig } from '@idt/bff';
import { ConfigError } from '@idt/core';
import { describe, expect, it } from 'vitest';

const SECRET = 'a'.repeat(32);
const OLD_SECRET = 'b'.repeat(40);

const VALID = {
  OIDC_ISSUER: 'https://id.example.com',
  OIDC_CLIENT_ID: 'acme-dashboard',
  OIDC_CLIENT_SECRET: 'client-secret',
  OIDC_REDIRECT_URI: 'https://app.example.com/bff/callback',
  OIDC_POST_LOGOUT_REDIRECT_URI: 'https://app.example.com/',
  BFF_API_BASE_URL: 'https://id.example.com',
  COOKIE_PASSWORD: SECRET,
};

function problemsOf(env: Record<string, string | undefined>): string[] {
  try {
    bffConfigFromEnv(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('bffConfigFromEnv', () => {
  it('reads the SPEC 2.1 names with their defaults', () => {
    const config = bffConfigFromEnv(VALID);
    expect(config).toMatchObject({
      issuer: 'https://id.example.com',
      metadataUrl: undefined,
      clientId: 'acme-dashboard',
      clientSecret: 'client-secret',
      redirectUri: 'https://app.example.com/bff/callback',
      postLogoutRedirectUri: 'https://app.example.com/',
      scopes: ['openid', 'profile', 'email', 'offline_access'],
      apiBaseUrl: 'https://id.example.com',
      sessionTtlSeconds: 86_400,
      cookie: { name: '__Host-idt_bff', secure: true },
    });
    expect(config.cookie.keyring.currentKeyId).toBe('default');
    expect([...config.cookie.keyring.secrets]).toEqual([['default', SECRET]]);
  });

  it('reads the optional variables', () => {
    const config = bffConfigFromEnv({
      ...VALID,
      OIDC_SCOPES: 'openid  profile roles users.read',
      OIDC_METADATA_URL: 'http://idt:8080/.well-known/openid-configuration',
      BFF_SESSION_TTL_SECONDS: '3600',
      COOKIE_NAME: '__Host-acme',
    });
    expect(config.scopes).toEqual(['openid', 'profile', 'roles', 'users.read']);
    expect(config.metadataUrl).toBe('http://idt:8080/.well-known/openid-configuration');
    expect(config.sessionTtlSeconds).toBe(3600);
    expect(config.cookie.name).toBe('__Host-acme');
  });

  it('drops the __Host- prefix when cookies are not Secure (plain-http local development)', () => {
    const config = bffConfigFromEnv({
      ...VALID,
      COOKIE_SECURE: 'false',
      OIDC_REDIRECT_URI: 'http://dashboard.local:3000/bff/callback',
    });
    expect(config.cookie).toMatchObject({ name: 'idt_bff', secure: false });
    expect(problemsOf({ ...VALID, COOKIE_SECURE: 'false', COOKIE_NAME: '__Host-x' })).toEqual([
      'COOKIE_NAME: "__Host-x" needs Secure cookies: drop the __Host-/__Secure- prefix or leave COOKIE_SECURE true',
    ]);
    expect(problemsOf({ ...VALID, COOKIE_SECURE: 'maybe' })).toEqual(['COOKIE_SECURE: must be true or false']);
  });

  it('reports every missing variable at once, each with its fix', () => {
    const problems = problemsOf({});
    expect(problems).toEqual([
      'OIDC_ISSUER: is required: set it to the issuer URL the identity server advertises',
      'OIDC_CLIENT_ID: is required: set it to the client id of the registered application',
      'OIDC_CLIENT_SECRET: is required: set it to the client secret shown once at registration',
      'OIDC_REDIRECT_URI: is required: set it to the public URL of /bff/callback on this host',
      'BFF_API_BASE_URL: is required: set it to the base URL of the idt API',
      'COOKIE_PASSWORD: is required: set COOKIE_PASSWORD to a secret of at least 32 characters (or COOKIE_PASSWORDS for rotation)',
    ]);
    let message = '';
    try {
      bffConfigFromEnv({});
    } catch (error) {
      message = (error as Error).message;
    }
    for (const name of [
      'OIDC_ISSUER',
      'OIDC_CLIENT_ID',
      'OIDC_CLIENT_SECRET',
      'OIDC_REDIRECT_URI',
      'BFF_API_BASE_URL',
      'COOKIE_PASSWORD',
    ]) {
      expect(message).toContain(`- ${name}:`);
    }
  });

  it('refuses a cookie secret shorter than 32 characters', () => {
    expect(problemsOf({ ...VALID, COOKIE_PASSWORD: 'x'.repeat(31) })).toEqual([
      'COOKIE_PASSWORD: must be at least 32 characters: generate one with `openssl rand -base64 32`',
    ]);
  });

  it('reads COOKIE_PASSWORDS: the first key seals, every key unseals', () => {
    const { COOKIE_PASSWORD: _, ...rest } = VALID;
    const config = bffConfigFromEnv({ ...rest, COOKIE_PASSWORDS: JSON.stringify({ k2: SECRET, default: OLD_SECRET }) });
    expect(config.cookie.keyring.currentKeyId).toBe('k2');
    expect([...config.cookie.keyring.secrets.keys()]).toEqual(['k2', 'default']);
  });

  it('reports each bad COOKIE_PASSWORDS entry', () => {
    const { COOKIE_PASSWORD: _, ...rest } = VALID;
    expect(problemsOf({ ...rest, COOKIE_PASSWORDS: JSON.stringify({ 'k-2': SECRET, '42': SECRET, k3: 'short' }) })).toEqual([
      // JSON lists integer-like keys first: which is exactly why they are refused.
      'COOKIE_PASSWORDS: key id "42" is all digits: add a letter (e.g. "k42"), since JSON lists such keys first and the wrong key would seal',
      'COOKIE_PASSWORDS: key id "k-2" may hold only letters, digits and underscores',
      'COOKIE_PASSWORDS: the secret of "k3" must be at least 32 characters: generate one with `openssl rand -base64 32`',
    ]);
    expect(problemsOf({ ...rest, COOKIE_PASSWORDS: '{not json' })).toEqual([
      'COOKIE_PASSWORDS: is not valid JSON: write an object such as {"k2":"<new secret>","default":"<old secret>"}',
    ]);
    expect(problemsOf({ ...rest, COOKIE_PASSWORDS: '["a"]' })).toEqual([
      'COOKIE_PASSWORDS: must be a JSON object of key id to secret, such as {"k2":"<new secret>","default":"<old secret>"}',
    ]);
    expect(problemsOf({ ...rest, COOKIE_PASSWORDS: '{}' })).toEqual([
      'COOKIE_PASSWORDS: must hold at least one key id and secret',
    ]);
    expect(problemsOf({ ...VALID, COOKIE_PASSWORDS: JSON.stringify({ k2: SECRET }) })).toEqual([
      'COOKIE_PASSWORD: set either COOKIE_PASSWORD or COOKIE_PASSWORDS, not both',
    ]);
  });

  it('checks URLs, scopes and the session lifetime, all problems together', () => {
    const problems = problemsOf({
      ...VALID,
      OIDC_ISSUER: 'http://id.example.com',
      OIDC_REDIRECT_URI: 'https://app.example.com/callback',
      OIDC_POST_LOGOUT_REDIRECT_URI: 'not a url',
      BFF_API_BASE_URL: 'ftp://id.example.com',
      OIDC_SCOPES: 'profile email',
      BFF_SESSION_TTL_SECONDS: '10',
      COOKIE_NAME: 'bad name',
    });
    expect(problems).toEqual([
      'BFF_SESSION_TTL_SECONDS: must be between 60 and 31536000',
      'OIDC_ISSUER: must use https (http is accepted only for localhost and 127.0.0.1, or with COOKIE_SECURE=false)',
      'OIDC_REDIRECT_URI: must point at /bff/callback (the route that completes the sign-in), e.g. https://app.example.com/bff/callback',
      'OIDC_POST_LOGOUT_REDIRECT_URI: "not a url" is not an absolute URL: give the full address, e.g. https://example.com',
      'BFF_API_BASE_URL: must be an http(s) URL, not ftp:',
      'OIDC_SCOPES: must include openid (the BFF signs users in with OpenID Connect)',
      "COOKIE_NAME: may hold only letters, digits and !#$%&'*+-.^_`|~",
    ]);
  });

  it('accepts http on loopback hosts', () => {
    const config = bffConfigFromEnv({
      ...VALID,
      OIDC_ISSUER: 'http://127.0.0.1:8080',
      OIDC_REDIRECT_URI: 'http://localhost:3000/bff/callback',
    });
    expect(config.issuer).toBe('http://127.0.0.1:8080');
  });
});

describe('resolveBffConfig', () => {
  it('validates the object form with the same rules, naming the options', () => {
    expect(() => resolveBffConfig({ issuer: 'https://id.example.com', cookiePassword: 'short' })).toThrow(ConfigError);
    try {
      resolveBffConfig({ issuer: 'https://id.example.com', cookiePassword: 'short', sessionTtlSeconds: 1.5 });
    } catch (error) {
      expect((error as ConfigError).problems).toEqual([
        'clientId: is required: set it to the client id of the registered application',
        'clientSecret: is required: set it to the client secret shown once at registration',
        'redirectUri: is required: set it to the public URL of /bff/callback on this host',
        'apiBaseUrl: is required: set it to the base URL of the idt API',
        'sessionTtlSeconds: must be a whole number of seconds between 60 and 31536000',
        'cookiePassword: must be at least 32 characters: generate one with `openssl rand -base64 32`',
      ]);
    }
    const config = resolveBffConfig({
      issuer: 'https://id.example.com/idt',
      clientId: 'c',
      clientSecret: 's',
      redirectUri: 'https://app.example.com/bff/callback',
      apiBaseUrl: 'https://id.example.com/idt',
      scopes: ['openid', 'roles'],
      cookiePasswords: { k2: SECRET, default: OLD_SECRET },
    });
    expect(config.scopes).toEqual(['openid', 'roles']);
    expect(config.cookie.keyring.currentKeyId).toBe('k2');
    expect(config.postLogoutRedirectUri).toBeUndefined();
  });
});
