/**
 * The reference server's entry point.
 *
 *   node dist/main.js migrate   apply pending migrations
 *   node dist/main.js serve     start the server (refuses pending migrations outside Testing)
 *   node dist/main.js start     migrate, then serve (what `npm start` runs)
 */
import { ConfigError, explainKeyDecryption, type IdtConfig, loadConfig, loadProjectEnv, migrationSetsOf } from '@idt/core';
import { createDatabase, PendingMigrationsError, redactDatabaseUrl, runMigrations } from '@idt/core/knex';
import { describeListenFailure, type ListenFailure, listenFailureLines } from '@idt/core/node';
import { createReferenceServer, referenceModules } from './index.js';

/** The settings, kept for messages about them when the server fails. */
let loaded: { config: IdtConfig; project: ReturnType<typeof loadProjectEnv> } | undefined;

/**
 * Whether a browser at `bound` reaches the same listener as at `publicUrl`:
 * same port, and a loopback name for a loopback address (localhost and 127.0.0.1).
 */
function sameListener(publicUrl: string, bound: string): boolean {
  const loopback = (host: string) => ['localhost', '127.0.0.1', '[::1]'].includes(host);
  const a = new URL(publicUrl);
  const b = new URL(bound);
  if (a.protocol !== b.protocol || a.port !== b.port) return false;
  return a.hostname === b.hostname || (loopback(a.hostname) && loopback(b.hostname));
}

/** The server could not listen, for a reason the operator fixes (see `describeListenFailure`). */
class ListenFailed extends Error {
  readonly failure: ListenFailure;
  constructor(failure: ListenFailure, cause: unknown) {
    super(failure.detail, { cause });
    this.failure = failure;
  }
}

async function main(command: string): Promise<number> {
  // The project env file (.env, which `npm start` writes), as the `idt` CLI reads it: the environment wins.
  const project = loadProjectEnv();
  // Module settings are read from process.env: give them the file's variables too.
  for (const name of project.fromFile) process.env[name] = project.env[name];
  const config = loadConfig(project.env, {}, { baseDir: project.directory, origin: project });
  loaded = { config, project };
  if (project.envFile) console.log(`Settings: the environment over ${project.envFile}`);
  if (command === 'migrate' || command === 'start') {
    const db = createDatabase(config.databaseUrl);
    try {
      const report = await runMigrations(db, migrationSetsOf(referenceModules()));
      const applied = report.reduce((sum, set) => sum + set.applied.length, 0);
      console.log(`Migrations: ${applied} applied on ${redactDatabaseUrl(config.databaseUrl)}`);
    } finally {
      await db.destroy();
    }
    if (command === 'migrate') return 0;
  }
  const idt = await createReferenceServer({ resolvedConfig: config });
  // Last resort, not a fix: a promise nobody handled is a bug to log, not a reason to drop every other request.
  process.on('unhandledRejection', (reason: unknown) =>
    idt.logger.error('unhandled promise rejection (a bug; the server keeps running)', { error: reason }),
  );
  const { url } = await idt.listen(config.port, config.host).catch(async (error: unknown) => {
    // A port in use (or forbidden, or a host of another machine) is the operator's to fix: one line and the fix, as `idt serve` says it.
    const failure = describeListenFailure(error, {
      port: config.port,
      host: config.host,
      anotherPort: (port) => (command === 'start' ? `PORT=${port} npm start` : `PORT=${port}`),
      anotherHost: (host) => (command === 'start' ? `HOST=${host} npm start` : `HOST=${host}`),
    });
    if (!failure) throw error;
    await idt.close();
    throw new ListenFailed(failure, error);
  });
  const setupRequired = await idt.services.identity.setup.isSetupRequired();
  const publicUrl = config.publicBaseUrl;
  // The issuer's URL, not the bound address: a sign-in started on another host name
  // (127.0.0.1 for localhost) has no sign-in cookie and ends as "This sign-in has expired".
  const origin = new URL(publicUrl).origin;
  if (sameListener(publicUrl, url)) {
    console.log(`idt ${config.environment} server listening on ${origin}`);
    if (publicUrl !== origin) console.log(`  Public URL:     ${publicUrl}`);
    console.log(`  Bound to:       ${new URL(url).host} (open ${origin}, the issuer's host, in the browser)`);
  } else {
    console.log(`idt ${config.environment} server listening on ${url}`);
    console.log(`  Public URL:     ${publicUrl} (the issuer; sign in there)`);
  }
  console.log(`  Database:       ${redactDatabaseUrl(config.databaseUrl)}`);
  console.log(`  Modules:        ${idt.modules.map((module) => module.id).join(', ')}`);
  console.log(`  API reference:  ${publicUrl}/scalar`);
  console.log(`  Discovery:      ${publicUrl}/.well-known/openid-configuration`);
  console.log(
    setupRequired
      ? `  Setup required: yes. Create the first administrator: POST ${publicUrl}/v1/identity/setup/admin (or run \`idt setup\`)`
      : '  Setup required: no',
  );
  const stop = async (signal: string) => {
    console.log(`Received ${signal}; shutting down.`);
    await idt.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
  return -1;
}

const command = process.argv[2] ?? 'serve';
if (!['migrate', 'serve', 'start'].includes(command)) {
  console.error(`Unknown command "${command}". Use migrate, serve or start.`);
  process.exit(2);
}
main(command).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    const explained = loaded ? explainKeyDecryption(error, loaded.config, loaded.project) : error;
    if (error instanceof ListenFailed) {
      console.error(listenFailureLines(error.failure).join('\n'));
    } else if (error instanceof ConfigError) {
      console.error(error.message);
      const file = error.origin?.envFile ?? loaded?.project.envFile ?? './.env';
      console.error(
        `Fix: set each variable above in ${file} or the environment (docs/configuration.md); in Development (IDT_ENVIRONMENT=Development) neither IDT_KEY_ENCRYPTION_SECRET nor IDT_SMTP_URL is required.`,
      );
    } else if (error instanceof PendingMigrationsError) {
      // The reference server's operators run `npm start` or `npm run migrate`, not createIdt.
      const names = error.pending.flatMap((set) => set.pending.map((name) => `  - ${set.owner}: ${name}`));
      console.error(
        `The database has ${names.length} pending migration(s); run \`npm run migrate\` (or \`npx idt migrate\`) first, or serve with \`node dist/main.js start\`, which applies them:\n${names.join('\n')}`,
      );
    } else if (explained !== error) {
      console.error((explained as Error).message);
    } else {
      console.error(error);
    }
    process.exit(1);
  },
);
