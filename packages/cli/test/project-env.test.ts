import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunOptions, run } from '@idt/cli';
import { createTestDatabase, freePort, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** Runs `idt` as the binary does in `cwd`: the project env file under `env` (a terminal's, without IDT_* variables). */
function idtIn(cwd: string, argv: string[], env: Record<string, string> = {}, options: Partial<RunOptions> = {}) {
  return run(argv, { cwd, env: { IDT_LOG_LEVEL: 'warn', ...env }, projectEnv: true, ...options });
}

/** The one error line and the hints of a failed run. */
function errorOf(stderr: string): { line: string; hints: string[] } {
  const [line = '', ...hints] = stderr.trim().split('\n');
  expect(line).toMatch(/^error: /);
  expect(stderr).not.toMatch(/^\s+at /m);
  return { line, hints: hints.map((hint) => hint.trim()) };
}

describe.each(testDialects())('idt demo, then idt serve from the same directory, on %s', (dialect) => {
  let database: TestDatabase;
  let dir: string;

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    dir = mkdtempSync(join(tmpdir(), 'idt-project-'));
  });
  afterAll(async () => {
    await database?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('writes the project .env and the password file, prints the commands, and idt serve then serves the demo', async () => {
    const port = await freePort();
    const terminal = { PORT: String(port) };
    const demo = await idtIn(dir, ['demo', '--database', database.url, '--json'], terminal);
    expect(demo.exitCode, demo.stderr).toBe(0);
    const answer = JSON.parse(demo.stdout);
    // The project env file carries the demo's environment and database, so the next commands need no options.
    const projectEnv = readFileSync(join(dir, '.env'), 'utf8');
    expect(projectEnv).toContain('IDT_ENVIRONMENT=Development');
    expect(projectEnv).toContain(
      `IDT_DATABASE_URL=${dialect === 'sqlite' ? `sqlite:${database.url.slice('sqlite:'.length)}` : database.url}`,
    );
    expect(answer).toMatchObject({
      ok: true,
      issuer: `http://localhost:${port}`,
      projectEnvFile: join(dir, '.env'),
      commands: {
        serve: 'npx idt serve',
        signIn: 'npx idt sign-in --from data/demo/cli.env',
        resetPassword: 'npx idt users reset-password demo@example.com --password-stdin',
      },
      signIn: { url: `http://localhost:${port}`, email: 'demo@example.com', passwordFile: join(dir, 'data/demo/admin-password') },
    });
    // The password is not lost: it is in a file only this user reads.
    expect(readFileSync(join(dir, 'data/demo/admin-password'), 'utf8').trim()).toBe(answer.admin.password);
    expect(statSync(join(dir, 'data/demo/admin-password')).mode & 0o777).toBe(0o600);
    expect(answer.envFiles.cli).toBe(join(dir, 'data/demo/cli.env'));
    expect(readFileSync(answer.envFiles.cli, 'utf8')).toContain('OIDC_REDIRECT_URI=http://127.0.0.1:8765/callback');

    // `idt serve` as printed: same directory, no options. The demo's signing keys decrypt, and its clients get tokens.
    const stop = new AbortController();
    let served = '';
    const serving = idtIn(dir, ['serve'], terminal, {
      signal: stop.signal,
      stdout: {
        write: (chunk: string) => {
          served += chunk;
        },
      },
    });
    try {
      await expect.poll(() => served, { timeout: 20_000, interval: 100 }).toContain('Setup required: no');
      expect(served).toContain(`idt Development server listening on http://localhost:${port}`);
      expect(served).toContain(`Bound to:       127.0.0.1:${port}`);
      const token = await idtIn(dir, ['token', '--from', 'data/demo/service.env']);
      expect(token.exitCode, token.stderr).toBe(0);
      const users = await fetch(`http://localhost:${port}/v1/identity/users?page=1&pageSize=50`, {
        headers: { authorization: `Bearer ${token.stdout.trim()}` },
      });
      expect(users.status).toBe(200);
      expect(JSON.stringify(await users.json())).toContain('demo@example.com');
    } finally {
      stop.abort();
    }
    expect((await serving).exitCode).toBe(0);

    // A second demo keeps the password file and says where it is.
    const again = await idtIn(dir, ['demo'], terminal);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toContain('Saved in:  data/demo/admin-password');
    expect(again.stdout).toContain('1. Serve it:        npx idt serve');
  });

  it('names the secret file and the fix when the data directory is not the one the keys were made with', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'idt-elsewhere-'));
    try {
      const result = await idtIn(dir, ['users', 'list'], { IDT_DATA_DIR: elsewhere });
      expect(result.exitCode).toBe(1);
      const { line, hints } = errorOf(result.stderr);
      expect(line).toBe(
        `error: Cannot decrypt a signing key: IDT_KEY_ENCRYPTION_SECRET differs from the one that encrypted it, or the value was altered. The secret was read from the Development secret file ${join(elsewhere, 'key-encryption.secret')}. (Config.KeyEncryptionSecretMismatch)`,
      );
      expect(hints).toEqual([expect.stringMatching(/^Fix: use the data directory the database was created with \(IDT_DATA_DIR/)]);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});

describe('the project env file', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'idt-env-file-'));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('resolves relative paths against its own directory, and the environment wins over it', async () => {
    const project = mkdtempSync(join(dir, 'project-'));
    writeFileSync(join(project, '.env'), 'IDT_ENVIRONMENT=Development\nIDT_DATABASE_URL=sqlite:./data/idt.sqlite\n');
    // From another directory, naming the file: the database lands in the project, not the working directory.
    const migrate = await idtIn(dir, ['migrate', '--json'], { IDT_ENV_FILE: join(project, '.env') });
    expect(migrate.exitCode, migrate.stderr).toBe(0);
    expect(existsSync(join(project, 'data', 'idt.sqlite'))).toBe(true);
    expect(existsSync(join(dir, 'data'))).toBe(false);
    // An explicit variable wins over the file's.
    const status = await idtIn(project, ['users', 'list', '--json'], {
      IDT_DATABASE_URL: `sqlite:${join(dir, 'missing.sqlite')}`,
    });
    expect(status.exitCode).toBe(1);
    expect(JSON.parse(status.stdout).error.code).toBe('Database.Unreachable');
    // IDT_ENV_FILE naming no file is a configuration error.
    const named = await idtIn(dir, ['migrate', '--status'], { IDT_ENV_FILE: join(dir, 'nope.env') });
    expect(named.exitCode).toBe(1);
    expect(errorOf(named.stderr).hints[0]).toMatch(/^IDT_ENV_FILE: .*nope\.env does not exist/);
  });

  it('names the file a bad value came from, and where to put a missing one', async () => {
    const project = mkdtempSync(join(dir, 'production-'));
    writeFileSync(
      join(project, '.env'),
      `IDT_ENVIRONMENT=Production\nIDT_DATABASE_URL=sqlite:./idt.sqlite\nIDT_MAIL_FROM=nobody\n`,
    );
    const file = join(project, '.env');
    const result = await idtIn(project, ['users', 'list']);
    expect(result.exitCode).toBe(1);
    const { line, hints } = errorOf(result.stderr);
    expect(line).toBe(
      `error: Invalid configuration in the environment and ${file}: IDT_KEY_ENCRYPTION_SECRET, IDT_MAIL_FROM. (Config.Invalid)`,
    );
    expect(hints).toEqual([
      `IDT_KEY_ENCRYPTION_SECRET: is required in Production (at least 32 random characters). Fix: set IDT_KEY_ENCRYPTION_SECRET in ${file} (or export it) (see docs/configuration.md), or run outside Production: IDT_ENVIRONMENT=Development in ${file} (or export it).`,
      `IDT_MAIL_FROM: must be an e-mail address, optionally with a name: "idt <no-reply@example.com>" (set in ${file}). Fix: set IDT_MAIL_FROM to a valid value in ${file} (see docs/configuration.md).`,
    ]);
    // The environment wins: with a valid sender exported, only the secret is left to fix (and no SMTP: users list sends no mail).
    const exported = await idtIn(project, ['users', 'list'], { IDT_MAIL_FROM: 'idt <no-reply@example.com>' });
    expect(errorOf(exported.stderr).line).toBe(
      `error: Invalid configuration in the environment and ${file}: IDT_KEY_ENCRYPTION_SECRET. (Config.Invalid)`,
    );
  });
});
