import { resolveScalarScript } from '@idt/core';
import { describeListenFailure } from '@idt/core/node';
import type { IdentityServices } from '@idt/identity';
import type { Command } from 'commander';
import {
  assertTargetMigrated,
  type CommonOptions,
  commandLogger,
  commandTarget,
  composeIdt,
  describeComposition,
  type GlobalOptions,
  withDatabase,
} from '../context.js';
import { CliError, usageError } from '../errors.js';
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
 * `idt serve`: the composition (the config file's, else the reference
 * modules) on node:http through `idt.listen`; refuses pending migrations
 * outside Testing.
 */
export function registerServe(program: Command, io: CliIo): void {
  withCommonOptions(
    program
      .command('serve')
      .summary('serve the composed modules on node:http')
      .description(
        'Serves the modules of the config file (without one, the reference modules) with the settings of docs/configuration.md, as `npm start` serves the reference server after migrating. Outside the Testing environment it refuses a database with pending migrations. Stops on SIGINT or SIGTERM.',
      )
      .option('--port <port>', 'the port to listen on; 0 picks a free one (default: PORT, else 8080)')
      .option('--host <host>', 'the interface to bind (default: HOST, else 127.0.0.1)'),
  )
    .addHelpText(
      'after',
      examples('idt serve', 'IDT_ENVIRONMENT=Development idt serve --port 9090', 'idt serve --config deploy/idt.config.mjs'),
    )
    .action(async (options: ServeOptions) => {
      const out = createOutput(io, options.json === true);
      let port: number | undefined;
      if (options.port !== undefined) {
        port = Number(options.port);
        if (!/^\d+$/.test(options.port) || port > 65535) throw usageError(`--port must be a port number, not "${options.port}".`);
      }
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options, {
        // The server sends mail: Production needs IDT_SMTP_URL here.
        requires: { mail: true, keyEncryptionSecret: true },
        overrides: {
          ...(port !== undefined ? { port } : {}),
          ...(options.host !== undefined ? { host: options.host } : {}),
        },
      });
      const { config, database } = target;
      await withDatabase(
        target,
        async (db) => {
          if (config.environment !== 'Testing') await assertTargetMigrated(db, target);
          // The host's logger when the config file gives one, as its own server would log.
          const idt = await composeIdt(target, db, target.composition.options.logger ?? commandLogger(io, target));
          // Last resort, not a fix: a promise nobody handled is a bug to log, not a reason to drop every other request.
          const onUnhandled = (reason: unknown) =>
            idt.logger.error('unhandled promise rejection (a bug; the server keeps running)', { error: reason });
          process.on('unhandledRejection', onUnhandled);
          try {
            const { url } = await idt.listen(config.port, config.host).catch((error: unknown) => {
              throw listenError(error, config.port, config.host);
            });
            const identity = (idt.services as { identity?: IdentityServices }).identity;
            const setupRequired = identity ? await identity.setup.isSetupRequired() : undefined;
            const publicUrl = config.publicBaseUrl;
            const modules = idt.modules.map((module) => module.id);
            // The issuer's URL, not the bound address: a sign-in started on another host name
            // (127.0.0.1 for localhost) has no sign-in cookie and ends as "This sign-in has expired".
            const origin = new URL(publicUrl).origin;
            const sameListener = reachesListener(publicUrl, url);
            if (sameListener) {
              out.line(`idt ${config.environment} server listening on ${origin}`);
              if (publicUrl !== origin) out.line(`  Public URL:     ${publicUrl}`);
              out.line(`  Bound to:       ${new URL(url).host} (open ${origin}, the issuer's host, in the browser)`);
            } else {
              out.line(`idt ${config.environment} server listening on ${url}`);
              out.line(`  Public URL:     ${publicUrl} (the issuer; sign in there)`);
            }
            out.line(`  Database:       ${database}`);
            out.line(`  Modules:        ${describeComposition(target)}`);
            if (target.composition.options.docs !== false) {
              // The viewer needs the optional @scalar/api-reference; the document is always there.
              out.line(`  API reference:  ${publicUrl}${resolveScalarScript() ? '/scalar' : '/openapi/v1.json'}`);
            }
            if (setupRequired !== undefined) {
              out.line(
                setupRequired
                  ? `  Setup required: yes. Create the first administrator: POST ${publicUrl}/v1/identity/setup/admin (or run \`idt setup\`)`
                  : '  Setup required: no',
              );
            }
            out.result({
              url,
              publicUrl,
              environment: config.environment,
              database,
              config: target.composition.file ?? null,
              modules,
              ...(setupRequired !== undefined ? { setupRequired } : {}),
            });
            const reason = await stopRequested(io);
            out.progress(`Received ${reason}; shutting down.`);
          } finally {
            process.off('unhandledRejection', onUnhandled);
            await idt.close();
          }
        },
        'refuse',
      );
    });
}

/**
 * Whether a browser at `publicUrl` reaches the listener bound at `bound`:
 * same scheme and port, and the same host or two loopback names
 * (`localhost` and `127.0.0.1`).
 */
export function reachesListener(publicUrl: string, bound: string): boolean {
  const loopback = (host: string) => ['localhost', '127.0.0.1', '[::1]'].includes(host);
  const a = new URL(publicUrl);
  const b = new URL(bound);
  if (a.protocol !== b.protocol || a.port !== b.port) return false;
  return a.hostname === b.hostname || (loopback(a.hostname) && loopback(b.hostname));
}

/**
 * A failure to listen as the operator should read it: the port is taken
 * (`Server.PortInUse`) or needs privileges (`Server.PortForbidden`), or the
 * host is not this machine's (`Server.HostUnavailable`), with what to do
 * (`describeListenFailure` of `@idt/core/node`, which `npm start` reports with too).
 */
export function listenError(error: unknown, port: number, host: string): unknown {
  const failure = describeListenFailure(error, {
    port,
    host,
    anotherPort: (other) => (other === 0 ? '--port 0' : `--port ${other} (or PORT=${other})`),
    anotherHost: (other) => (other === '127.0.0.1' ? `--host ${other}` : `HOST=${other}`),
  });
  return failure ? new CliError(failure.code, failure.detail, { hints: [failure.fix], cause: error }) : error;
}
