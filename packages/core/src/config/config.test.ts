import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, normalizePathPrefix } from './config.js';

describe('loadConfig', () => {
  it('has working defaults outside Production', () => {
    const config = loadConfig({ IDT_ENVIRONMENT: 'Development' });
    expect(config).toMatchObject({
      environment: 'Development',
      port: 8080,
      databaseUrl: 'sqlite:./data/idt.sqlite',
      issuer: 'http://localhost:8080',
      pathPrefix: '',
      publicBaseUrl: 'http://localhost:8080',
      authUrl: 'http://localhost:8080',
    });
    expect(config.rateLimits.auth).toEqual({ permitLimit: 30, windowSeconds: 60 });
    expect(config.rateLimits.global).toEqual({ permitLimit: 1000, windowSeconds: 3600 });
  });

  it('reads every documented variable', () => {
    const config = loadConfig({
      IDT_ENVIRONMENT: 'Production',
      PORT: '9000',
      IDT_DATABASE_URL: 'postgres://u:p@db:5432/idt',
      IDT_ISSUER: 'https://id.example.com/',
      IDT_PATH_PREFIX: '/idt/',
      IDT_KEY_ENCRYPTION_SECRET: 'x'.repeat(32),
      IDT_RATE_LIMIT_AUTH_PERMIT_LIMIT: '5',
      IDT_RATE_LIMIT_AUTH_WINDOW_SECONDS: '10',
      IDT_TRUST_PROXY: 'true',
    });
    expect(config).toMatchObject({
      environment: 'Production',
      port: 9000,
      issuer: 'https://id.example.com',
      pathPrefix: '/idt',
      publicBaseUrl: 'https://id.example.com/idt',
      authUrl: 'https://id.example.com/idt',
      trustProxy: true,
    });
    expect(config.rateLimits.auth).toEqual({ permitLimit: 5, windowSeconds: 10 });
  });

  it('reports every invalid setting at once', () => {
    try {
      loadConfig({
        IDT_ENVIRONMENT: 'Production',
        PORT: 'eighty',
        IDT_ISSUER: 'not a url',
        IDT_DATABASE_URL: 'mysql://x',
      });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems.join('\n')).toMatch(/PORT/);
    }
    try {
      loadConfig({ IDT_ENVIRONMENT: 'Production', IDT_ISSUER: 'ftp://x', IDT_DATABASE_URL: 'mysql://x' });
      expect.unreachable();
    } catch (error) {
      const text = (error as ConfigError).problems.join('\n');
      expect(text).toMatch(/IDT_ISSUER/);
      expect(text).toMatch(/IDT_DATABASE_URL/);
      expect(text).toMatch(/IDT_KEY_ENCRYPTION_SECRET/);
    }
  });

  it('refuses a non-positive rate-limit window', () => {
    expect(() => loadConfig({ IDT_ENVIRONMENT: 'Testing', IDT_RATE_LIMIT_GLOBAL_WINDOW_SECONDS: '0' })).toThrow(ConfigError);
  });

  it('refuses an unknown environment', () => {
    expect(() => loadConfig({ IDT_ENVIRONMENT: 'Staging' })).toThrow(ConfigError);
  });
});

describe('normalizePathPrefix', () => {
  it('normalizes slashes', () => {
    expect(normalizePathPrefix(undefined)).toBe('');
    expect(normalizePathPrefix('/')).toBe('');
    expect(normalizePathPrefix('idt')).toBe('/idt');
    expect(normalizePathPrefix('/a/b/')).toBe('/a/b');
  });

  it('refuses characters that are not plain path segments', () => {
    expect(() => normalizePathPrefix('/a b')).toThrow(ConfigError);
    expect(() => normalizePathPrefix('/a?b')).toThrow(ConfigError);
  });
});
