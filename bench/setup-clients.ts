/**
 * Registers the benchmark's service-account client through the services of
 * the reference server (no HTTP, no bearer token needed) and prints
 * `{ clientId, clientSecret, organizationId }` as one JSON line.
 *
 *   node --import tsx bench/setup-clients.ts <organizationId>
 *
 * Reads the same environment as the server (IDT_DATABASE_URL, IDT_ISSUER,
 * IDT_KEY_ENCRYPTION_SECRET, …). Run by bench/run.mjs after the first
 * administrator was created over HTTP; `organizationId` is the platform
 * organization that setup returned.
 */
import { createLogger, loadConfig } from '@idt/core';
import { createReferenceServer } from '../examples/server/src/index.js';

const organizationId = process.argv[2];
if (!organizationId) {
  console.error('usage: node --import tsx bench/setup-clients.ts <organizationId>');
  process.exit(2);
}

const config = loadConfig(process.env);
const logger = createLogger({ level: 'warn', fields: { service: 'idt-bench-setup' } });
const server = await createReferenceServer({ resolvedConfig: config, logger, migrations: 'skip' });
try {
  const registration = await server.services.oidc.clients.register({ userId: null, platformAdmin: true }, organizationId, {
    kind: 'service-account',
    name: 'Bench service account',
    scopes: ['users.read'],
  });
  process.stdout.write(
    `${JSON.stringify({ clientId: registration.client.clientId, clientSecret: registration.clientSecret, organizationId })}\n`,
  );
} finally {
  await server.close();
}
process.exit(0);
