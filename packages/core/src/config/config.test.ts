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
    expect(config.mail).toEqual({ transport: 'file', from: 'idt <no-reply@localhost>', directory: './data/mail' });
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
      IDT_DATA_DIR: '/var/lib/idt/',
      IDT_SMTP_URL: 'smtps://idt:secret@mail.example.com:465',
      IDT_MAIL_FROM: 'Example ID <no-reply@example.com>',
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
    expect(config.mail).toEqual({
      transport: 'smtp',
      smtpUrl: 'smtps://idt:secret@mail.example.com:465',
      from: 'Example ID <no-reply@example.com>',
      directory: '/var/lib/idt/mail',
    });
  });

  it('writes mail to files without IDT_SMTP_URL, except in Production', () => {
    const testing = loadConfig({ IDT_ENVIRONMENT: 'Testing', IDT_DATA_DIR: '/tmp/idt' });
    expect(testing.mail).toEqual({ transport: 'file', from: 'idt <no-reply@localhost>', directory: '/tmp/idt/mail' });
    const overridden = loadConfig({ IDT_ENVIRONMENT: 'Testing' }, { mail: { directory: '/tmp/mailbox', from: 'a@b.test' } });
    expect(overridden.mail).toEqual({ transport: 'file', from: 'a@b.test', directory: '/tmp/mailbox' });
    const viaOverride = loadConfig({ IDT_ENVIRONMENT: 'Testing' }, { mail: { smtpUrl: 'smtp://127.0.0.1:2525' } });
    expect(viaOverride.mail).toMatchObject({ transport: 'smtp', smtpUrl: 'smtp://127.0.0.1:2525' });
    try {
      loadConfig({ IDT_ENVIRONMENT: 'Production', IDT_KEY_ENCRYPTION_SECRET: 'x'.repeat(32) });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems).toEqual([expect.stringMatching(/^IDT_SMTP_URL: is required in Production/)]);
    }
    // A host that sends mail itself (a mailer given to createIdt) needs no SMTP URL.
    const ownMailer = loadConfig(
      { IDT_ENVIRONMENT: 'Production', IDT_KEY_ENCRYPTION_SECRET: 'x'.repeat(32) },
      {},
      { hasMailer: true },
    );
    expect(ownMailer.mail.transport).toBe('file');
  });

  it('refuses a mail URL of another scheme and a sender without an address', () => {
    try {
      loadConfig({ IDT_ENVIRONMENT: 'Testing', IDT_SMTP_URL: 'http://mail.example.com', IDT_MAIL_FROM: 'idt' });
      expect.unreachable();
    } catch (error) {
      const text = (error as ConfigError).problems.join('\n');
      expect(text).toMatch(/IDT_SMTP_URL: must be an smtp:\/\/ or smtps:\/\/ URL/);
      expect(text).toMatch(/IDT_MAIL_FROM/);
    }
    expect(() => loadConfig({ IDT_ENVIRONMENT: 'Testing', IDT_SMTP_URL: 'not a url' })).toThrow(/IDT_SMTP_URL/);
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
