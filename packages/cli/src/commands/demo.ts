import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { dirname, relative, resolve } from 'node:path';
import { PROJECT_ENV_FILE, randomToken } from '@idt/core';
import { runMigrations } from '@idt/core/knex';
import type { Command } from 'commander';
import {
  type CommonOptions,
  commandTarget,
  describeComposition,
  type GlobalOptions,
  projectEnvOf,
  requireModules,
  withDatabase,
  withServicesInTransaction,
} from '../context.js';
import type { CliIo } from '../io.js';
import { createOutput } from '../output.js';
import { applySeed, writeSeedEnvFiles } from '../seed/apply.js';
import { parseSeed, type SeedFileInput } from '../seed/schema.js';
import { recordSeedApplied } from './operator-audit.js';
import { printSeedReport, seedResult } from './seed.js';
import { examples, withCommonOptions } from './shared.js';

interface DemoOptions extends CommonOptions {
  readonly dir: string;
  readonly force?: boolean;
}

/** The demo administrator's e-mail address. */
export const DEMO_ADMIN_EMAIL = 'demo@example.com';

/** The modules the demo needs: it seeds an administrator, an organization and clients. */
const DEMO_MODULES = ['identity', 'oidc'] as const;

/** Where the example dashboard runs. */
const DASHBOARD_ORIGIN = 'http://localhost:3000';

/** The loopback redirect URI of the demo's command-line application, where `idt sign-in` listens (RFC 8252). */
export const DEMO_SIGN_IN_REDIRECT_URI = 'http://127.0.0.1:8765/callback';

/** The file, in the demo directory, that keeps the demo administrator's password (mode 0600). */
export const DEMO_PASSWORD_FILE = 'admin-password';

/** The demo: an organization, its administrator, the example dashboard and a service account. */
export function demoSeed(adminPassword: string): SeedFileInput {
  return {
    admin: {
      email: DEMO_ADMIN_EMAIL,
      password: adminPassword,
      firstName: 'Demo',
      lastName: 'Admin',
      organizationName: 'Demo',
    },
    organizations: [{ name: 'Demo' }],
    clients: [
      {
        name: 'Dashboard',
        tenantName: 'Demo',
        redirectUris: [`${DASHBOARD_ORIGIN}/bff/callback`],
        postLogoutRedirectUris: [`${DASHBOARD_ORIGIN}/`],
        frontchannelLogoutUri: `${DASHBOARD_ORIGIN}/bff/frontchannel-logout`,
        scopes: [
          'openid',
          'profile',
          'email',
          'offline_access',
          'roles',
          'users.read',
          'organizations.read',
          'notifications.read',
        ],
        envFile: 'dashboard.env',
      },
      {
        // For `idt sign-in`: the authorization code flow with PKCE on a loopback redirect, as a native app.
        name: 'Command line',
        tenantName: 'Demo',
        redirectUris: [DEMO_SIGN_IN_REDIRECT_URI],
        scopes: ['openid', 'profile', 'email', 'roles', 'users.read', 'organizations.read'],
        envFile: 'cli.env',
      },
      {
        name: 'Service',
        kind: 'service-account',
        tenantName: 'Demo',
        scopes: ['users.read', 'organizations.read'],
        envFile: 'service.env',
      },
    ],
  };
}

/**
 * `idt demo`: a ready-to-try deployment: migrations, then the demo seed, with
 * env files for the example dashboard. Idempotent.
 */
export function registerDemo(program: Command, io: CliIo): void {
  withCommonOptions(
    program
      .command('demo')
      .summary('migrate and seed a ready-to-try demo, with env files for the example dashboard')
      .description(
        `Applies the migrations of the composition (it needs the identity and oidc modules), then seeds a demo: the organization Demo, its administrator ${DEMO_ADMIN_EMAIL} (the generated password is shown once), the application Dashboard (redirect ${DASHBOARD_ORIGIN}/bff/callback), the application Command line (redirect ${DEMO_SIGN_IN_REDIRECT_URI}, for \`idt sign-in\`) and the service account sa-demo-service, writes dashboard.env, cli.env and service.env, and keeps the administrator's password in ${DEMO_PASSWORD_FILE} (mode 0600) beside them. Runs in the Development environment unless IDT_ENVIRONMENT says otherwise; without a project env file (./.env) it writes one with that environment and database, so \`idt serve\` and every other command run here serve and find the demo. Prints the commands to serve it and to sign in. Idempotent.`,
      )
      .option('--dir <dir>', 'where to write the env files and the password file', './data/demo')
      .option('--force', 'overwrite existing env files'),
  )
    .addHelpText(
      'after',
      examples('npx idt demo', 'npx idt demo --database postgres://postgres@127.0.0.1:5432/idt', 'npx idt demo --json'),
    )
    .action(async (options: DemoOptions) => {
      const out = createOutput(io, options.json === true);
      const project = projectEnvOf(io);
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options, {
        defaults: (env) => (env.IDT_ENVIRONMENT ? {} : { environment: 'Development' }),
      });
      const { config } = target;
      requireModules(target, 'demo', DEMO_MODULES);
      // First, so `idt serve` and the other commands run here find this demo even if it stops half-way.
      const envFile = await writeProjectEnv(io, project, target.env, options.database ?? config.databaseUrl, out);
      out.progress(`Applying migrations to ${target.database} for ${describeComposition(target)}…`);
      await withDatabase(target, (db) => runMigrations(db, target.migrationSets));
      const password = randomToken(18);
      const seed = parseSeed(demoSeed(password), {}, 'The demo seed');
      const dir = resolve(io.cwd, options.dir);
      const needs = { command: 'demo', modules: DEMO_MODULES };
      const report = await withServicesInTransaction(io, out, target, needs, async (services, idt) => {
        const applied = await applySeed({ services }, seed, {
          baseDir: dir,
          force: options.force === true,
          command: 'idt demo',
          progress: out.progress,
          writeEnvFiles: false,
        });
        await recordSeedApplied(idt, applied, { command: 'idt demo', file: 'the demo seed' });
        return applied;
      });
      await writeSeedEnvFiles(report, { command: 'idt demo', force: options.force === true });
      printSeedReport(out, report, 'the demo');
      const passwordFile = resolve(dir, DEMO_PASSWORD_FILE);
      if (report.admin) await writePasswordFile(passwordFile, password);
      const shown = (path: string) => {
        const rel = relative(io.cwd, path);
        return rel.startsWith('..') ? path : rel;
      };
      // The commands, as they work from this directory: the project env file carries the settings.
      const settings = envFile === undefined && !target.env.IDT_ENVIRONMENT ? 'IDT_ENVIRONMENT=Development ' : '';
      const database = options.database === undefined || envFile !== undefined ? '' : ` --database '${options.database}'`;
      const serve = `${settings}npx idt serve${database}`;
      const cliEnv = shown(resolve(dir, 'cli.env'));
      const signIn = `npx idt sign-in --from ${cliEnv}`;
      const passwordShown = existsSync(passwordFile) ? shown(passwordFile) : undefined;
      const resetPassword = `npx idt users reset-password ${DEMO_ADMIN_EMAIL} --password-stdin${database}`;
      out.line('');
      if (report.admin || passwordShown) {
        out.line('Demo administrator:');
        out.line(`  E-mail:    ${DEMO_ADMIN_EMAIL}`);
        if (report.admin) out.line(`  Password:  ${password}`);
        if (passwordShown) out.line(`  Saved in:  ${passwordShown} (cat ${passwordShown})`);
        out.line(`  Lost it?   printf '%s\\n' "$NEW_PASSWORD" | ${resetPassword}`);
      } else {
        // Setup was completed before the demo ran (by idt setup or an earlier demo elsewhere): no demo administrator.
        out.line(`Setup was already complete, so the demo created no administrator: sign in as the one who completed it.`);
        out.line(
          `  Lost the password?  printf '%s\\n' "$NEW_PASSWORD" | npx idt users reset-password <e-mail> --password-stdin${database}`,
        );
      }
      out.line('');
      out.line('Next:');
      out.line(`  1. Serve it:        ${serve}    (in this checkout \`npm start\` serves the same)`);
      out.line(`  2. Sign in:         ${signIn}`);
      out.line(
        `                      prints a URL to open in the browser; sign in as ${DEMO_ADMIN_EMAIL}; prints an access token`,
      );
      out.line(`  3. Call the API:    curl -H "authorization: Bearer $TOKEN" ${config.publicBaseUrl}/v1/identity/users/me`);
      out.line(`  API reference:      ${config.publicBaseUrl}/scalar`);
      out.line(
        `  Example dashboard:  node --env-file=${shown(resolve(dir, 'dashboard.env'))} --import tsx examples/dashboard/src/main.ts (in the idt repository; ${DASHBOARD_ORIGIN})`,
      );
      out.line(`  Service account:    npx idt token --from ${shown(resolve(dir, 'service.env'))}`);
      out.result({
        ...seedResult(report),
        ...(report.admin ? { admin: { ...report.admin, password } } : {}),
        issuer: config.publicBaseUrl,
        envFiles: {
          dashboard: resolve(dir, 'dashboard.env'),
          cli: resolve(dir, 'cli.env'),
          service: resolve(dir, 'service.env'),
        },
        projectEnvFile: envFile ?? project.envFile ?? null,
        signIn: {
          url: config.publicBaseUrl,
          email: report.admin || passwordShown ? DEMO_ADMIN_EMAIL : null,
          passwordFile: passwordShown === undefined ? null : passwordFile,
          resetPassword,
        },
        commands: { serve, signIn, resetPassword },
      });
    });
}

/** Keeps the demo password where only this user can read it (the data directory is git-ignored). */
async function writePasswordFile(file: string, password: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
}

/**
 * Writes the project env file when the directory has none, so `idt serve` and
 * every other command run here use the demo's environment and database (as
 * after `npm start`). Returns its path when written; leaves an existing file,
 * and settings given in the environment, alone.
 */
async function writeProjectEnv(
  io: CliIo,
  project: ReturnType<typeof projectEnvOf>,
  env: Readonly<Record<string, string | undefined>>,
  databaseUrl: string,
  out: ReturnType<typeof createOutput>,
): Promise<string | undefined> {
  if (!io.projectEnv || project.envFile !== undefined || env.IDT_ENV_FILE !== undefined) return undefined;
  if (env.IDT_ENVIRONMENT !== undefined || env.IDT_DATABASE_URL !== undefined) return undefined;
  const file = resolve(io.cwd, PROJECT_ENV_FILE);
  const url = databaseUrl.startsWith('sqlite:') ? toRelativeSqlite(databaseUrl, io.cwd) : databaseUrl;
  const text = [
    '# The settings of this directory, read by `npx idt …` and the reference server run here',
    '# (written by `idt demo`; keep it out of version control). The environment wins over it.',
    'IDT_ENVIRONMENT=Development',
    `IDT_DATABASE_URL=${url}`,
    '',
  ].join('\n');
  try {
    await writeFile(file, text, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw error;
  }
  out.progress(
    `Wrote ${file}: IDT_ENVIRONMENT=Development, IDT_DATABASE_URL=${url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')}.`,
  );
  return file;
}

/** `sqlite:/abs/dir/data/idt.sqlite` as `sqlite:./data/idt.sqlite` when under `cwd`. */
function toRelativeSqlite(url: string, cwd: string): string {
  const file = url.slice('sqlite:'.length);
  if (file === ':memory:' || !file.startsWith('/')) return url;
  const rel = relative(cwd, file);
  return rel.startsWith('..') ? url : `sqlite:./${rel}`;
}
