import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIdt, buildIdtAt, type IdtBuild } from './build.js';
import { installIdt, PASSWORD, ROOT, SETUP_ARGS, type Spawned, spawnProcess } from './support.js';

/** A config file composing identity and a module that mails every new user (so a command's events send mail). */
const MAILING_CONFIG = `import { defineEventHandler, defineIdtConfig } from '@idt/core';
import { identity, UserRegisteredEvent } from '@idt/identity';

const welcome = {
  id: 'welcome',
  requires: ['identity'],
  setup: (ctx) => ({
    services: {},
    handlers: [
      defineEventHandler({
        name: 'welcome.mail',
        module: 'welcome',
        event: UserRegisteredEvent,
        description: 'Mails every new user.',
        async handle({ payload }) {
          await ctx.mailer.send({ to: payload.email, subject: 'Welcome', text: 'Welcome aboard.' });
        },
      }),
    ],
  }),
};

export default defineIdtConfig({ modules: [identity(), welcome] });
`;

const SEED = JSON.stringify({ users: [{ email: 'bob@example.com', password: PASSWORD, firstName: 'Bob', lastName: 'B' }] });

/**
 * A project where `@idt/cli` is installed without the optional peer
 * `nodemailer`: the build of the sources outside the repository, beside a
 * `node_modules` holding every package of the repository's but nodemailer.
 */
describe('idt in a project without nodemailer', () => {
  let app: string;
  let build: IdtBuild;
  let env: Record<string, string>;

  const idt = (args: string[], stdin?: string): Promise<Spawned> =>
    spawnProcess(process.execPath, ['--', build.bin, ...args], { env, cwd: app, ...(stdin === undefined ? {} : { stdin }) });

  beforeAll(async () => {
    app = mkdtempSync(join(tmpdir(), 'idt-bare-'));
    // nodemailer is imported as an install imports it, by name from the project's node_modules, which has none.
    build = await buildIdtAt(join(app, 'idt'), { bare: ['nodemailer'] });
    // The project's node_modules: every package of the repository's (a few are imported by computed names), but nodemailer,
    // and the build's @idt packages, which a config file of the project imports.
    const modules = join(app, 'node_modules');
    mkdirSync(modules);
    for (const name of readdirSync(join(ROOT, 'node_modules'))) {
      if (name === 'nodemailer' || name === '@idt' || name.startsWith('.')) continue;
      symlinkSync(join(ROOT, 'node_modules', name), join(modules, name), 'dir');
    }
    symlinkSync(build.scope, join(modules, '@idt'), 'dir');
    writeFileSync(join(app, 'package.json'), '{ "name": "no-nodemailer", "private": true, "type": "module" }\n');
    env = {
      IDT_ENVIRONMENT: 'Development',
      IDT_DATABASE_URL: `sqlite:${join(app, 'data', 'idt.sqlite')}`,
      IDT_DATA_DIR: join(app, 'data'),
      IDT_ENV_FILE: 'none',
    };
  }, 60_000);
  afterAll(() => rmSync(app, { recursive: true, force: true }));

  it('cannot resolve nodemailer from the build (the premise)', async () => {
    expect(() => createRequire(join(build.dir, 'chunks', 'any.js')).resolve('nodemailer')).toThrow(/nodemailer/);
    const code = readdirSync(build.dir, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.js'))
      .map((name) => readFileSync(join(build.dir, name), 'utf8'));
    expect(code.some((text) => text.includes('import("nodemailer")'))).toBe(true);
    expect(code.some((text) => text.includes('node_modules/nodemailer'))).toBe(false);
  });

  it('migrates, completes setup and lists users: commands that send no mail need no mailer', async () => {
    const migrate = await idt(['migrate']);
    expect(migrate.stderr).not.toMatch(/error|nodemailer/i);
    expect(migrate.exitCode).toBe(0);
    const setup = await idt([...SETUP_ARGS], `${PASSWORD}\n`);
    expect({ exitCode: setup.exitCode, stderr: setup.stderr }).toEqual({
      exitCode: 0,
      stderr: 'Creating the first administrator (hashing the password)…\n',
    });
    expect(setup.stdout).toContain('Setup complete: ada@example.com owns the platform organization Acme.');
    const users = await idt(['users', 'list', '--json']);
    expect(users.exitCode).toBe(0);
    expect(JSON.parse(users.stdout).users).toHaveLength(1);
  }, 60_000);

  it('does the work of a command whose events send mail, and says in one line why the mail waits', async () => {
    writeFileSync(join(app, 'mailing.config.mjs'), MAILING_CONFIG);
    writeFileSync(join(app, 'seed.json'), SEED);
    const seed = await idt(['--config', 'mailing.config.mjs', 'seed', '--file', 'seed.json']);
    expect(seed.exitCode).toBe(0);
    expect(seed.stdout).toContain('created    user  bob@example.com');
    const warnings = seed.stderr.split('\n').filter((line) => line.startsWith('warning:') || line.startsWith('{'));
    expect(warnings).toEqual([
      "warning: 1 mail(s) of this command's events were not sent: sending mail needs the nodemailer package, which is not installed here. A running server sends them; to send them from idt, npm install nodemailer. (Mail.NodemailerMissing)",
    ]);
    expect(seed.stderr).not.toMatch(/^\s+at /m);
  }, 60_000);

  it('refuses to serve, in one line naming the package to install, since a server sends mail', async () => {
    const serve = await idt(['serve', '--port', '0']);
    expect(serve.exitCode).toBe(1);
    expect(serve.stderr.trimEnd().split('\n')).toEqual([
      'error: idt serve sends mail (SMTP with IDT_SMTP_URL, else .eml files in the data directory) with the nodemailer package, which is not installed. (Mail.NodemailerMissing)',
      '  Install it beside @idt/cli: npm install nodemailer (or give the config file a mailer: defineIdtConfig({ mailer, … })).',
    ]);
    expect(serve.stdout).toBe('');
  }, 60_000);
});

describe('idt where nodemailer is installed', () => {
  it('sends the mail of a command’s events (.eml files in Development)', async () => {
    const { bin } = await buildIdt();
    const dir = mkdtempSync(join(tmpdir(), 'idt-mailing-'));
    try {
      // The config file imports the build's @idt packages, which resolve nodemailer from the repository.
      await installIdt(dir);
      writeFileSync(join(dir, 'mailing.config.mjs'), MAILING_CONFIG);
      writeFileSync(join(dir, 'seed.json'), SEED);
      const env = {
        IDT_ENVIRONMENT: 'Development',
        IDT_DATABASE_URL: `sqlite:${join(dir, 'idt.sqlite')}`,
        IDT_DATA_DIR: dir,
        IDT_ENV_FILE: 'none',
      };
      const run = (args: string[]) =>
        spawnProcess(process.execPath, ['--', bin, '--config', 'mailing.config.mjs', ...args], { env, cwd: dir });
      expect((await run(['migrate'])).exitCode).toBe(0);
      const seed = await run(['seed', '--file', 'seed.json']);
      expect(seed.exitCode).toBe(0);
      expect(seed.stderr).not.toContain('warning:');
      expect(readdirSync(join(dir, 'mail')).filter((name) => name.endsWith('.eml'))).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
