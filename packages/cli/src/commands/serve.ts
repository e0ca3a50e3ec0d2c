import { assertMigrated, redactDatabaseUrl } from '@idt/core/knex';
import { createIdtServer, migrationSets } from '@idt/example-server';
import type { Command } from 'commander';
import { type CommonOptions, commandConfig, commandLogger, withDatabase } from '../context.js';
import { usageError } from '../errors.js';
import type { CliIo } from '../io.js';
import { createOutput } from '../output.js';
import { examples, withCommonOptions } from './shared.js';

interface ServeOptions extends CommonOptions {
  readonly port?: string;
  readonly host?: string;
}

/** Resolves on SIGINT, SIGTERM or when the run's signal aborts; says which. */
function stopRequested(io: CliIo): Promise<string> {
  return new Promise((resolve) => {
    const stop = (reason: string) => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      io.signal?.removeEventListener('abort', onAbort);
      resolve(reason);
    };
    const onInt = () => stop('SIGINT');
    const onTerm = () => stop('SIGTERM');
    const onAbort = () => stop('abort');
    process.once('SIGINT', onInt);
    process.once('SIGTERM', onTerm);
    if (io.signal?.aborted) stop('abort');
    else io.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * `idt serve`: the reference server, exactly as `npm start` serves it
 * (settings from the environment; refuses pending migrations outside Testing).
 */
export function registerServe(program: Command, io: CliIo): void {
  withCommonOptions(
    program
      .command('serve')
      .summary('start the reference server')
      .description(
        'Starts the reference server with the settings of docs/configuration.md, as `npm start` does after migrating. Outside the Testing environment it refuses a database with pending migrations. Stops on SIGINT or SIGTERM.',
      )
      .option('--port <port>', 'the port to listen on; 0 picks a free one (default: PORT, else 8080)')
      .option('--host <host>', 'the interface to bind (default: HOST, else 127.0.0.1)'),
  )
    .addHelpText('after', examples('idt serve', 'IDT_ENVIRONMENT=Development idt serve --port 9090'))
    .action(async (options: ServeOptions) => {
      const out = createOutput(io, options.json === true);
      let port: number | undefined;
      if (options.port !== undefined) {
        port = Number(options.port);
        if (!/^\d+$/.test(options.port) || port > 65535) throw usageError(`--port must be a port number, not "${options.port}".`);
      }
      const config = commandConfig(io, options, {
        ...(port !== undefined ? { port } : {}),
        ...(options.host !== undefined ? { host: options.host } : {}),
      });
      await withDatabase(config, async (db) => {
        if (config.environment !== 'Testing') await assertMigrated(db, migrationSets);
        const server = await createIdtServer({ config, db, logger: commandLogger(io, config) });
        try {
          const { url } = await server.listen(config.port, config.host);
          const setupRequired = await server.services.identity.setup.isSetupRequired();
          const publicUrl = config.publicBaseUrl;
          const database = redactDatabaseUrl(config.databaseUrl);
          out.line(`idt ${config.environment} server listening on ${url}`);
          if (publicUrl !== url) out.line(`  Public URL:     ${publicUrl}`);
          out.line(`  Database:       ${database}`);
          out.line(`  API reference:  ${publicUrl}/scalar`);
          out.line(
            setupRequired
              ? `  Setup required: yes. Create the first administrator: POST ${publicUrl}/v1/identity/setup/admin (or run \`idt setup\`)`
              : '  Setup required: no',
          );
          out.result({ url, publicUrl, environment: config.environment, database, setupRequired });
          const reason = await stopRequested(io);
          out.progress(`Received ${reason}; shutting down.`);
        } finally {
          await server.close();
        }
      });
    });
}
