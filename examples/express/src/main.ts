import { ConfigError } from '@idt/core';
import { PendingMigrationsError } from '@idt/core/knex';
import { startExpressApp } from './app.js';

/** A failure the operator fixes (a setting, pending migrations, a port in use or not allowed), as one message; `undefined` for a bug. */
function startFailure(error: unknown): string | undefined {
  if (error instanceof ConfigError || error instanceof PendingMigrationsError) return error.message;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'EADDRINUSE' || code === 'EACCES' ? (error as Error).message : undefined;
}

const { baseUrl, close } = await startExpressApp({ database: 'sqlite:./data/idt.sqlite', port: 3000 }).catch((error: unknown) => {
  const message = startFailure(error);
  if (message === undefined) throw error;
  // The message says what to do; a stack trace would only bury it.
  console.error(`error: ${message}`);
  process.exit(1);
});
console.log(`idt is served under ${baseUrl} (discovery: ${baseUrl}/.well-known/openid-configuration)`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void close());
