import { resolve } from 'node:path';
import { randomToken } from '@idt/core';
import { runMigrations } from '@idt/core/knex';
import type { Command } from 'commander';
import {
  type CommonOptions,
  commandTarget,
  describeComposition,
  type GlobalOptions,
  requireModules,
  withDatabase,
  withServicesInTransaction,
} from '../context.js';
import type { CliIo } from '../io.js';
import { createOutput } from '../output.js';
import { applySeed, writeSeedEnvFiles } from '../seed/apply.js';
import { parseSeed, type SeedFileInput } from '../seed/schema.js';
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
        `Applies the migrations of the composition (it needs the identity and oidc modules), then seeds a demo: the organization Demo, its administrator ${DEMO_ADMIN_EMAIL} (the generated password is shown once), the application Dashboard (redirect ${DASHBOARD_ORIGIN}/bff/callback) and the service account sa-demo-service, and writes dashboard.env and service.env. Runs in the Development environment unless IDT_ENVIRONMENT says otherwise. Idempotent.`,
      )
      .option('--dir <dir>', 'where to write dashboard.env and service.env', './data/demo')
      .option('--force', 'overwrite existing env files'),
  )
    .addHelpText('after', examples('idt demo', 'idt demo --dir ./demo --database sqlite:./demo/idt.sqlite'))
    .action(async (options: DemoOptions) => {
      const out = createOutput(io, options.json === true);
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options, {
        defaults: (env) => (env.IDT_ENVIRONMENT ? {} : { environment: 'Development' }),
      });
      const { config } = target;
      requireModules(target, 'demo', DEMO_MODULES);
      out.progress(`Applying migrations to ${target.database} for ${describeComposition(target)}…`);
      await withDatabase(target, (db) => runMigrations(db, target.migrationSets));
      const password = randomToken(18);
      const seed = parseSeed(demoSeed(password), {}, 'The demo seed');
      const dir = resolve(io.cwd, options.dir);
      const needs = { command: 'demo', modules: DEMO_MODULES };
      const report = await withServicesInTransaction(io, out, target, needs, (services) =>
        applySeed({ services }, seed, {
          baseDir: dir,
          force: options.force === true,
          command: 'idt demo',
          progress: out.progress,
          writeEnvFiles: false,
        }),
      );
      await writeSeedEnvFiles(report, { command: 'idt demo', force: options.force === true });
      printSeedReport(out, report, 'the demo');
      if (report.admin) {
        out.line('');
        out.line('Demo administrator (the password is shown only now):');
        out.line(`  E-mail:   ${report.admin.email}`);
        out.line(`  Password: ${password}`);
      }
      out.line('');
      out.line(`Serve it with \`idt serve\` (or \`npm start\`) at ${config.publicBaseUrl}.`);
      out.line(`The example dashboard reads ${resolve(dir, 'dashboard.env')}; a backend service ${resolve(dir, 'service.env')}.`);
      out.result({
        ...seedResult(report),
        ...(report.admin ? { admin: { ...report.admin, password } } : {}),
        issuer: config.publicBaseUrl,
        envFiles: { dashboard: resolve(dir, 'dashboard.env'), service: resolve(dir, 'service.env') },
      });
    });
}
