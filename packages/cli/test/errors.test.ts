import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrationSetsOf } from '@idt/core';
import { identity } from '@idt/identity';
import { createTestDatabase, referenceMigrationSets, type TestDatabase } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { run } from '../src/cli.js';
import { buildIdt } from './build.js';
import { idt, jsonOf, ROOT, testEnv } from './support.js';

/** One error line, the hints indented below it, and never a stack frame. */
function expectOneErrorLine(stderr: string, code: string): string[] {
  const lines = stderr.trimEnd().split('\n');
  expect(lines[0]).toMatch(new RegExp(`^error: .+ \\(${code.replace('.', '\\.')}\\)$`));
  expect(lines.slice(1).every((line) => line.startsWith('  '))).toBe(true);
  expect(stderr).not.toMatch(/^\s+at /m);
  return lines;
}

describe('errors of idt: one line, a stable code, a way out', () => {
  let dir: string;
  let database: TestDatabase;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'idt-errors-'));
    database = await createTestDatabase('sqlite', referenceMigrationSets);
  });
  afterAll(async () => {
    await database.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports a PostgreSQL server that refuses connections as Database.Unreachable, naming IDT_DATABASE_URL', async () => {
    const env = testEnv('postgres://postgres@127.0.0.1:1/idt', dir);
    const result = await idt(env, ['migrate', '--status']);
    expect(result.exitCode).toBe(1);
    const [line, ...hints] = expectOneErrorLine(result.stderr, 'Database.Unreachable');
    expect(line).toContain('postgres://postgres@127.0.0.1:1/idt');
    expect(line).toContain('ECONNREFUSED');
    expect(hints.join('\n')).toContain('IDT_DATABASE_URL');
    expect(hints.join('\n')).toContain('server is running');

    const json = await idt(env, ['setup', '--email', 'a@example.com', '--json'], { interactive: true });
    expect(json.exitCode).toBe(1);
    expect(jsonOf(json)).toEqual({
      ok: false,
      error: { code: 'Database.Unreachable', detail: expect.stringContaining('ECONNREFUSED') },
    });
    expect(json.stdout).not.toContain(' at ');
  });

  it.runIf(inject('postgresAdminUrl'))('reports a refused PostgreSQL login as Database.AuthenticationFailed', async () => {
    const url = new URL(inject('postgresAdminUrl') ?? '');
    url.username = 'no_such_idt_user';
    url.password = 'wrong';
    const result = await idt(testEnv(url.href, dir), ['migrate', '--status']);
    expect(result.exitCode).toBe(1);
    const [line, ...hints] = expectOneErrorLine(result.stderr, 'Database.AuthenticationFailed');
    expect(line).not.toContain('wrong');
    expect(hints.join('\n')).toContain('user and password in IDT_DATABASE_URL');
    expect(hints.join('\n')).toContain('no_such_idt_user:***@');
  });

  it('reports a SQLite file that cannot be created, and refuses a missing one outside migrate, as Database.Unreachable', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a directory\n');
    const blocked = await idt(testEnv(`sqlite:${join(file, 'data', 'idt.sqlite')}`, dir), ['migrate']);
    expect(blocked.exitCode).toBe(1);
    const [line] = expectOneErrorLine(blocked.stderr, 'Database.Unreachable');
    expect(line).toContain(`${file} is not a directory`);

    const missing = join(dir, 'nowhere', 'idt.sqlite');
    const setup = await idt(testEnv(`sqlite:${missing}`, dir), [
      'register-client',
      ...['--org', 'acme'],
      '--kind',
      'application',
      '--name',
      'X',
    ]);
    expect(setup.exitCode).toBe(1);
    expectOneErrorLine(setup.stderr, 'Database.Unreachable');
    expect(setup.stderr).toContain('the file does not exist');
    expect(setup.stderr).toContain('idt migrate');
    expect(existsSync(join(dir, 'nowhere'))).toBe(false);
  });

  it('migrate --status on a SQLite file that does not exist creates nothing and lists every migration pending', async () => {
    const missing = join(dir, 'not-yet', 'deeper', 'idt.sqlite');
    const env = testEnv(`sqlite:${missing}`, dir);
    const human = await idt(env, ['migrate', '--status']);
    expect(human.exitCode).toBe(0);
    expect(human.stdout).toContain('(does not exist yet)');
    const result = await idt(env, ['migrate', '--status', '--json']);
    expect(result.exitCode).toBe(0);
    const status = jsonOf(result);
    const total = referenceMigrationSets.reduce((sum, set) => sum + set.migrations.length, 0);
    expect(status).toMatchObject({ ok: true, exists: false, pending: total });
    expect(status.sets.every((set: { applied: string[] }) => set.applied.length === 0)).toBe(true);
    expect(existsSync(join(dir, 'not-yet'))).toBe(false);

    // Applying them creates the directory and the file.
    expect((await idt(env, ['migrate'])).exitCode).toBe(0);
    expect(existsSync(missing)).toBe(true);
    expect(jsonOf(await idt(env, ['migrate', '--status', '--json']))).toMatchObject({ exists: true, pending: 0 });
  });

  it('reports a port in use as Server.PortInUse with the way to choose another', async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const result = await idt(testEnv(database.url, dir), ['serve', '--port', String(port), '--host', '127.0.0.1']);
      expect(result.exitCode).toBe(1);
      const [line, ...hints] = expectOneErrorLine(result.stderr, 'Server.PortInUse');
      expect(line).toBe(`error: Port ${port} on 127.0.0.1 is already in use by another process. (Server.PortInUse)`);
      expect(hints.join('\n')).toContain('--port');
      expect(hints.join('\n')).toContain('PORT=');
      const json = await idt(testEnv(database.url, dir), ['serve', '--port', String(port), '--host', '127.0.0.1', '--json']);
      expect(jsonOf(json).error.code).toBe('Server.PortInUse');
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('names the variable, where it was read from and the fix in a configuration error', async () => {
    const env = { IDT_ENVIRONMENT: 'Production', IDT_DATABASE_URL: database.url, IDT_DATA_DIR: dir };
    // A command requires only the settings it uses: migrations need neither the secret nor SMTP ...
    expect((await idt(env, ['migrate', '--status'])).exitCode).toBe(0);
    // ... a command composing the modules needs the secret, not SMTP (it sends no mail) ...
    const result = await idt(env, ['users', 'list']);
    expect(result.exitCode).toBe(1);
    const [line, ...hints] = expectOneErrorLine(result.stderr, 'Config.Invalid');
    expect(line).toBe('error: Invalid configuration in the environment: IDT_KEY_ENCRYPTION_SECRET. (Config.Invalid)');
    expect(hints).toContainEqual(
      expect.stringMatching(
        /^ {2}IDT_KEY_ENCRYPTION_SECRET: is required in Production.* Fix: set IDT_KEY_ENCRYPTION_SECRET in \.\/\.env \(or export it\)/,
      ),
    );
    expect(hints.join('\n')).toContain('IDT_ENVIRONMENT=Development');
    const json = jsonOf(await idt(env, ['users', 'list', '--json']));
    expect(json.error.code).toBe('Config.Invalid');
    // ... and the server needs both.
    const serve = await idt(env, ['serve', '--port', '0']);
    expect(expectOneErrorLine(serve.stderr, 'Config.Invalid')[0]).toBe(
      'error: Invalid configuration in the environment: IDT_KEY_ENCRYPTION_SECRET, IDT_SMTP_URL. (Config.Invalid)',
    );
  });

  it('blames a bad --database on the option, not on the env file that also sets the database', async () => {
    const project = mkdtempSync(join(dir, 'project-'));
    writeFileSync(join(project, '.env'), 'IDT_ENVIRONMENT=Development\nIDT_DATABASE_URL=sqlite:./data/idt.sqlite\n');
    const result = await run(['migrate', '--database', 'mysql://idt:s3cret@db.internal/idt'], {
      cwd: project,
      env: {},
      projectEnv: true,
    });
    expect(result.exitCode).toBe(1);
    const [line, ...hints] = expectOneErrorLine(result.stderr, 'Config.Invalid');
    expect(line).toBe('error: Invalid configuration in --database: IDT_DATABASE_URL. (Config.Invalid)');
    expect(hints).toEqual([
      '  IDT_DATABASE_URL: must start with sqlite: or postgres:// (given by --database mysql://idt:***@db.internal/idt). Fix: pass --database sqlite:<file> or --database postgres://user:password@host:5432/database.',
    ]);
    expect(result.stderr).not.toContain('.env');
    expect(result.stderr).not.toContain('s3cret');
    expect(existsSync(join(project, 'data'))).toBe(false);

    // The same value from the env file is blamed on the file.
    writeFileSync(join(project, '.env'), 'IDT_ENVIRONMENT=Development\nIDT_DATABASE_URL=mysql://db.internal/idt\n');
    const fromFile = await run(['migrate'], { cwd: project, env: {}, projectEnv: true });
    expect(fromFile.stderr).toContain(
      `(set in ${join(project, '.env')}). Fix: set IDT_DATABASE_URL to a valid value in ${join(project, '.env')}`,
    );

    // ... and from the config file on the config file.
    writeFileSync(join(project, '.env'), 'IDT_ENVIRONMENT=Development\n');
    writeFileSync(
      join(project, 'idt.config.mjs'),
      "import { identity } from '@idt/identity';\nexport default { modules: [identity()], database: 'mysql://db.internal/idt' };\n",
    );
    const fromConfig = await run(['migrate'], { cwd: project, env: {}, projectEnv: true });
    const [configLine, ...configHints] = expectOneErrorLine(fromConfig.stderr, 'Config.Invalid');
    expect(configLine).toBe('error: Invalid configuration in database in ./idt.config.mjs: IDT_DATABASE_URL. (Config.Invalid)');
    expect(configHints.join('\n')).toContain('Fix: set database in ./idt.config.mjs to a valid value');
    expect(existsSync(join(project, 'data'))).toBe(false);
  });

  it('names where the database came from when it cannot be reached', async () => {
    const flag = await idt(testEnv(database.url, dir), [
      'migrate',
      '--status',
      '--database',
      'postgres://postgres@127.0.0.1:1/idt',
    ]);
    const [, ...hints] = expectOneErrorLine(flag.stderr, 'Database.Unreachable');
    expect(hints[0]).toBe('  Check --database, and that the database server is running and accepts connections there.');
    const project = mkdtempSync(join(dir, 'unreachable-'));
    writeFileSync(join(project, '.env'), 'IDT_DATABASE_URL=postgres://postgres@127.0.0.1:1/idt\n');
    const fromFile = await run(['migrate', '--status'], { cwd: project, env: {}, projectEnv: true });
    expect(fromFile.stderr).toContain(`Check IDT_DATABASE_URL in ${join(project, '.env')}, and that`);
  });

  it('suggests idt migrate with the same --config and --database when migrations are pending', async () => {
    const project = mkdtempSync(join(dir, 'pending-'));
    writeFileSync(
      join(project, 'identity.config.mjs'),
      "import { identity } from '@idt/identity';\nexport default { modules: [identity()] };\n",
    );
    const file = join(project, 'empty db.sqlite');
    // An empty database that exists: setup opens it and finds every migration pending.
    writeFileSync(file, '');
    const env = { IDT_ENVIRONMENT: 'Development', IDT_DATA_DIR: project, IDT_LOG_LEVEL: 'warn' };
    const args = ['--config', 'identity.config.mjs', 'setup', '--database', `sqlite:${file}`, '--email', 'a@example.com'];
    const result = await run([...args, '--password-stdin', '--first-name', 'A', '--last-name', 'B', '--organization', 'O'], {
      cwd: project,
      env,
      stdin: 'a long enough passphrase\n',
    });
    expect(result.exitCode).toBe(1);
    const [line, ...hints] = expectOneErrorLine(result.stderr, 'Migrations.Pending');
    const pending = migrationSetsOf([identity()]).reduce((sum, set) => sum + set.migrations.length, 0);
    expect(line).toBe(
      `error: The database has ${pending} pending migration(s); run \`idt migrate --config identity.config.mjs --database 'sqlite:${file}'\` first. (Migrations.Pending)`,
    );
    expect(hints[0]).toBe('  - @idt/core: 0001_outbox');
    expect(hints).toHaveLength(pending);

    // The suggested command, run as printed, applies them; then setup goes on.
    const migrate = await run(['migrate', '--config', 'identity.config.mjs', '--database', `sqlite:${file}`], {
      cwd: project,
      env,
    });
    expect(migrate.exitCode).toBe(0);
    expect(migrate.stdout).toContain(`Migrations: ${pending} applied`);

    // A password is never printed; the hint says to put it back.
    const postgres = await run(['users', 'list', '--database', 'postgres://idt:s3cret@127.0.0.1:1/idt'], { cwd: project, env });
    expect(postgres.stderr).not.toContain('s3cret');
  });

  it('exits 130 without an error line when Ctrl-C ends a question on a terminal', async () => {
    const fresh = await createTestDatabase('sqlite', referenceMigrationSets);
    try {
      // `script` gives the binary a real terminal; Ctrl-C is typed once the first question shows.
      const env = { ...process.env, ...testEnv(fresh.url, dir) };
      const { bin } = await buildIdt();
      const child = spawn('script', ['-qfec', `node -- ${bin} setup`, '/dev/null'], { cwd: ROOT, env });
      let output = '';
      child.stdin.on('error', () => undefined); // the terminal may close its input first
      const typed = new Promise<void>((resolve) => {
        let sent = false;
        child.stdout.on('data', (chunk) => {
          output += chunk;
          if (!sent && output.includes('E-mail address')) {
            sent = true;
            child.stdin.write('\u0003');
            resolve();
          }
        });
      });
      const exitCode = await new Promise<number | null>((resolve) => child.once('close', resolve));
      await typed;
      expect(exitCode).toBe(130);
      expect(output).not.toContain('error:');
      expect(output).not.toContain('Server.Error');
    } finally {
      await fresh.destroy();
    }
  }, 60_000);
});
