/**
 * The reference server's entry point.
 *
 *   node dist/main.js migrate   apply pending migrations
 *   node dist/main.js serve     start the server (refuses pending migrations outside Testing)
 *   node dist/main.js start     migrate, then serve (what `npm start` runs)
 */
import { ConfigError, loadConfig, migrationSetsOf } from '@idt/core';
import { createDatabase, PendingMigrationsError, redactDatabaseUrl, runMigrations } from '@idt/core/knex';
import { createReferenceServer, referenceModules } from './index.js';

async function main(command: string): Promise<number> {
  const config = loadConfig(process.env);
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
  const { url } = await idt.listen(config.port, config.host);
  const setupRequired = await idt.services.identity.setup.isSetupRequired();
  const publicUrl = config.publicBaseUrl;
  console.log(`idt ${config.environment} server listening on ${url}`);
  if (publicUrl !== url) console.log(`  Public URL:     ${publicUrl}`);
  console.log(`  Database:       ${redactDatabaseUrl(config.databaseUrl)}`);
  console.log(`  Modules:        ${idt.modules.map((module) => module.id).join(', ')}`);
  console.log(`  API reference:  ${publicUrl}/scalar`);
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
    if (error instanceof PendingMigrationsError || error instanceof ConfigError) {
      console.error(error.message);
    } else {
      console.error(error);
    }
    process.exit(1);
  },
);
