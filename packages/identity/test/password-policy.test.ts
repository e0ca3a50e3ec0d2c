import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, type Logger, loadConfig } from '@idt/core';
import {
  createPasswordPolicy,
  createRangeBreachedPasswordCheck,
  DEFAULT_PASSWORD_MIN_LENGTH,
  identity,
  PasswordReasons,
  PasswordRejectedError,
} from '@idt/identity';
import { bootstrapAdmin, createTestIdt, registerUser, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, jsonInit } from './credentials-support.js';

const PASSWORD = 'correct horse battery staple';

/** A Pwned Passwords range stub on a loopback port: answers the breached list it holds, and records what it was asked. */
async function startRangeStub(breached: readonly string[], behaviour: { delayMs?: number; status?: number } = {}) {
  const asked: Array<{ url: string; padding: string | undefined }> = [];
  const server: Server = createServer((request: IncomingMessage, response) => {
    asked.push({ url: request.url ?? '', padding: request.headers['add-padding'] as string | undefined });
    const prefix = (request.url ?? '').split('/').at(-1)?.toUpperCase() ?? '';
    const lines = breached
      .map((password) => createHash('sha1').update(password).digest('hex').toUpperCase())
      .filter((digest) => digest.startsWith(prefix))
      .map((digest) => `${digest.slice(5)}:42`);
    // Padding entries: random suffixes with count 0.
    for (let i = 0; i < 5; i++) lines.push(`${randomBytes(18).toString('hex').slice(0, 35).toUpperCase()}:0`);
    // Padding with the suffix of a password that is not breached must not count.
    const answer = () => {
      response.writeHead(behaviour.status ?? 200, { 'content-type': 'text/plain' });
      response.end(lines.join('\r\n'));
    };
    if (behaviour.delayMs) setTimeout(answer, behaviour.delayMs);
    else answer();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/range`,
    asked,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const noop = () => undefined;
  const logger = { debug: noop, info: noop, error: noop, warn: (message: string) => void warnings.push(message) };
  return Object.assign(logger as unknown as Logger, { warnings, child: () => logger as unknown as Logger });
}

describe('the password policy', () => {
  const policy = createPasswordPolicy();

  it('accepts the passwords the suites use, in their NFKC form', async () => {
    for (const password of [PASSWORD, 'a brand new passphrase', 'violet lantern orbit meadow']) {
      expect(await policy.check(password, { email: 'ada@example.com', firstName: 'Ada', lastName: 'Admin' })).toEqual({
        ok: true,
        normalized: password,
      });
    }
    expect(await policy.check('ｃｏｒｒｅｃｔ ｈｏｒｓｅ ｂａｔｔｅｒｙ ｓｔａｐｌｅ')).toEqual({
      ok: true,
      normalized: PASSWORD,
    });
    // Decomposed and composed forms are one password.
    expect(await policy.check('cafe\u0301 lantern orbit meadow')).toEqual({ ok: true, normalized: 'café lantern orbit meadow' });
  });

  it('refuses short, long, common, weak and personal passwords with reasons', async () => {
    const cases: Array<[string, string[], Parameters<typeof policy.check>[1]?]> = [
      ['', [PasswordReasons.missing]],
      ['eleven char', [PasswordReasons.tooShort(12)]],
      ['ｅｌｅｖｅｎ ｃｈａｒ', [PasswordReasons.tooShort(12)]],
      ['x'.repeat(257), [PasswordReasons.tooLong(256)]],
      ['x'.repeat(10 * 1024), [PasswordReasons.tooLong(256)]],
      ['password1234', [PasswordReasons.common]],
      ['PASSWORD1234', [PasswordReasons.common]],
      ['qwertyuiop12', [PasswordReasons.common]],
      ['1234512345123451', [PasswordReasons.weak]],
      ['aaaaaaaaaaaaaaaa', [PasswordReasons.weak]],
      ['grace.hopper compiles cobol', [PasswordReasons.email], { email: 'Grace.Hopper@example.com' }],
      ['lovelace engine notes 1843', [PasswordReasons.name], { firstName: 'Ada', lastName: 'Lovelace' }],
      ['my name is ada, really long', [], { firstName: 'Ad' }],
    ];
    for (const [password, reasons, context] of cases) {
      const verdict = await policy.check(password, context);
      if (reasons.length === 0) expect(verdict.ok).toBe(true);
      else expect(verdict).toEqual({ ok: false, reasons });
    }
    await expect(policy.require('password1234')).rejects.toBeInstanceOf(PasswordRejectedError);
    await expect(policy.require('password1234')).rejects.toMatchObject({
      code: 'Identity.PasswordRejected',
      status: 422,
      reasons: [PasswordReasons.common],
    });
  });

  it('judges a 256-character random password quickly', async () => {
    const password = randomBytes(192).toString('base64');
    const started = performance.now();
    expect((await policy.check(password)).ok).toBe(true);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('takes a configured minimum, never below 12', async () => {
    const strict = createPasswordPolicy({ minLength: 16 });
    expect(await strict.check(PASSWORD)).toMatchObject({ ok: true });
    expect(await strict.check('violet lantern')).toEqual({ ok: false, reasons: [PasswordReasons.tooShort(16)] });
    expect(() => createPasswordPolicy({ minLength: 8 })).toThrow(RangeError);
    expect(DEFAULT_PASSWORD_MIN_LENGTH).toBe(12);
  });
});

describe('the password settings of identity()', () => {
  const config = loadConfig({ IDT_ENVIRONMENT: 'Testing' });
  const resolve = (env: Record<string, string>) => identity().settings?.resolve(env, config);

  it('default to a 12-character minimum, no breach check and 20 reset requests per client address', () => {
    expect(resolve({})).toMatchObject({
      passwordMinLength: 12,
      breachedPasswordsUrl: undefined,
      passwordResetMaxRequestsPerIp: 20,
    });
    expect(
      resolve({ IDT_PASSWORD_MIN_LENGTH: '16', IDT_BREACHED_PASSWORDS_URL: 'https://api.pwnedpasswords.com/range' }),
    ).toMatchObject({ passwordMinLength: 16, breachedPasswordsUrl: 'https://api.pwnedpasswords.com/range' });
  });

  it('refuse a minimum below 12 and a breach list that is not an http(s) URL', () => {
    const invalid: Array<Record<string, string>> = [
      { IDT_PASSWORD_MIN_LENGTH: '8' },
      { IDT_PASSWORD_MIN_LENGTH: '300' },
      { IDT_BREACHED_PASSWORDS_URL: 'ftp://x' },
    ];
    for (const env of invalid) {
      expect(() => resolve(env)).toThrow(ConfigError);
    }
  });
});

describe('the breached-password range check against a local stub', () => {
  const stubs: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(stubs.splice(0).map((stub) => stub.close()));
  });

  it('sends only a 5-character prefix with Add-Padding, and ignores padding entries', async () => {
    const stub = await startRangeStub(['violet lantern orbit meadow']);
    stubs.push(stub);
    const check = createRangeBreachedPasswordCheck({ url: stub.url });
    expect(await check.isBreached('violet lantern orbit meadow')).toBe(true);
    expect(await check.isBreached(PASSWORD)).toBe(false);
    const digest = createHash('sha1').update('violet lantern orbit meadow').digest('hex').toUpperCase();
    expect(stub.asked[0]).toEqual({ url: `/range/${digest.slice(0, 5)}`, padding: 'true' });
    expect(stub.asked.every((entry) => entry.url.split('/').at(-1)?.length === 5)).toBe(true);

    const logger = recordingLogger();
    const policy = createPasswordPolicy({ breached: check, logger });
    expect(await policy.check('violet lantern orbit meadow')).toEqual({ ok: false, reasons: [PasswordReasons.breached] });
    expect((await policy.check(PASSWORD)).ok).toBe(true);
  });

  it('fails open, with a log line, when the list is slow, failing or unreachable', async () => {
    const slow = await startRangeStub([PASSWORD], { delayMs: 2000 });
    const failing = await startRangeStub([PASSWORD], { status: 503 });
    stubs.push(slow, failing);
    for (const url of [slow.url, failing.url, 'http://127.0.0.1:9/range', 'http://169.254.169.254/range']) {
      const logger = recordingLogger();
      const policy = createPasswordPolicy({
        breached: createRangeBreachedPasswordCheck({ url, timeoutMs: 200 }),
        logger,
      });
      const started = performance.now();
      expect(await policy.check(PASSWORD)).toEqual({ ok: true, normalized: PASSWORD });
      expect(performance.now() - started).toBeLessThan(1500);
      expect(logger.warnings).toEqual([expect.stringContaining('breached-password check failed')]);
    }
  });
});

describe.each(testDialects())('the policy where passwords are set, on %s', (dialect) => {
  let server: TestIdt;
  let stub: Awaited<ReturnType<typeof startRangeStub>>;

  beforeAll(async () => {
    stub = await startRangeStub(['violet lantern orbit meadow']);
    server = await createTestIdt({ dialect, env: { IDT_BREACHED_PASSWORDS_URL: stub.url, IDT_PASSWORD_MIN_LENGTH: '14' } });
  });
  afterAll(async () => {
    await server?.close();
    await stub?.close();
  });

  it('refuses a weak administrator at setup, then accepts the usual one', async () => {
    const body = { email: 'admin@example.com', firstName: 'Ada', lastName: 'Admin', organizationName: 'Platform' };
    const common = await server.fetch('/v1/identity/setup/admin', jsonInit('POST', { ...body, password: 'passwordpassword' }));
    const problem = await expectProblem(common, 422, 'Identity.PasswordRejected');
    expect(problem.detail).toContain(PasswordReasons.common);
    await bootstrapAdmin(server);
  });

  it('applies the configured minimum, the breach list and the personal words at registration', async () => {
    const register = (email: string, password: string) =>
      server.fetch('/v1/identity/auth/register', jsonInit('POST', { email, password, firstName: 'Test', lastName: 'User' }));
    const cases: Array<[string, string, string]> = [
      ['min@example.com', 'violet candle', PasswordReasons.tooShort(14)],
      ['breach@example.com', 'violet lantern orbit meadow', PasswordReasons.breached],
      ['quartzfeld@example.com', 'quartzfeld rides again today', PasswordReasons.email],
    ];
    for (const [email, password, reason] of cases) {
      const problem = await expectProblem(await register(email, password), 422, 'Identity.PasswordRejected');
      expect(problem.detail).toContain(reason);
      expect(await server.database.db('identity_users').where({ email })).toEqual([]);
    }
    // The old length rule still answers first, with the other field errors.
    const short = await expectProblem(await register('nope', 'short'), 400, 'Validation.Failed');
    expect(Object.keys(short.errors as object)).toEqual(expect.arrayContaining(['email', 'password']));
    expect(await registerUser(server, 'fine@example.com', PASSWORD)).toMatch(/^[0-9a-f-]{36}$/);
    expect(stub.asked.length).toBeGreaterThan(0);
  });
});
